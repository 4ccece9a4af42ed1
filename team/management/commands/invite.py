"""`manage.py invite DOMAIN EMAIL [--role viewer]`: invite someone to a site; prints the
link (mailed too when EMAIL_URL is set)."""

from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from analytics.models import Site
from team import audit, mail
from team.models import Invitation, Role


class Command(BaseCommand):
    help = "Invite EMAIL to DOMAIN with a role; prints the invitation's link (it works once, within 7 days)."

    def add_arguments(self, parser):
        parser.add_argument("domain")
        parser.add_argument("email")
        parser.add_argument("--role", default=Role.VIEWER, choices=Role.values)
        parser.add_argument("--no-mail", action="store_true", help="print the link only")

    def handle(self, domain, email, role, no_mail, **options):
        site = Site.objects.filter(domain=domain.strip().lower()).first()
        if site is None:
            raise CommandError(f"no site {domain!r}")
        if "@" not in email:
            raise CommandError(f"{email!r} is no email address")
        invitation, token = Invitation.create(site, email, role)
        url = mail.link(reverse("team:invitation", args=[token]))
        if not no_mail:
            mail.send_invitation(invitation, url)
        audit.record(
            site, None, "member.invited", f"{invitation.email} as {Role(role).label.lower()} (manage.py invite)"
        )
        self.stdout.write(f"Invited {invitation.email} to {site.domain} as {Role(role).label.lower()}; the link:")
        self.stdout.write(url)
