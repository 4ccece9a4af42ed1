"""`manage.py exclude DOMAIN (--ip CIDR | --path PATTERN | --host HOST) [--remove]`: traffic
a site does not count (the settings page's Exclusions, from a terminal)."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from analytics.models import Exclusion, Site


class Command(BaseCommand):
    help = "Exclude (or with --remove, count again) an IP address or network, a path pattern or a host of a site."

    def add_arguments(self, parser):
        parser.add_argument("domain")
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--ip", help="an address or network: 203.0.113.7, 203.0.113.0/24, 2001:db8::/32")
        what.add_argument("--path", help="a path pattern, as goals match pages: /admin/**")
        what.add_argument("--host", help="a host name: staging.example.com")
        parser.add_argument("--remove", action="store_true", help="count it again")

    def handle(self, domain, ip=None, path=None, host=None, remove=False, **options):
        site = Site.objects.filter(domain=domain.strip().lower()).first()
        if site is None:
            raise CommandError(f"no site {domain!r}")
        kind, value = next((k, v) for k, v in (("ip", ip), ("path", path), ("host", host)) if v is not None)
        made = Exclusion(site=site, kind=kind, value=value)
        try:
            made.full_clean(exclude=["site"] if remove else None)
        except ValidationError as e:
            raise CommandError("; ".join(m for ms in e.message_dict.values() for m in ms)) from None
        if remove:
            gone, _ = Exclusion.objects.filter(site=site, kind=kind, value=made.value).delete()
            self.stdout.write(f"{'Counting' if gone else 'Was not excluded:'} {made} on {site.domain} again")
            return
        made.save()
        self.stdout.write(f"Excluded {made} from {site.domain}")
