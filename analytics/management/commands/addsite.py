"""python manage.py addsite DOMAIN [--timezone TZ] [--daily-salt]: prints the new API key last."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from analytics.models import Site


class Command(BaseCommand):
    help = "Create a site and print its new API key (alone, on the last line)."

    def add_arguments(self, parser):
        parser.add_argument("domain")
        parser.add_argument("--timezone", default="UTC", help="IANA time zone, e.g. Europe/Berlin (default UTC)")
        parser.add_argument(
            "--daily-salt",
            action="store_true",
            help="strict privacy: rotate the visitor salt daily (unique visitors per day only, no retention)",
        )

    def handle(self, domain, timezone, daily_salt, **options):
        site = Site(
            domain=domain.strip().lower(),
            timezone=timezone,
            identity_mode=Site.IdentityMode.DAILY if daily_salt else Site.IdentityMode.STABLE,
        )
        try:
            site.full_clean()
        except ValidationError as e:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in e.message_dict.items())) from None
        site.save()
        key = site.create_api_key("created by addsite")
        self.stdout.write(f"Created site {site.domain} (time zone {site.timezone}, {site.identity_mode} salt).")
        self.stdout.write("Its API key, shown only now:")
        self.stdout.write(key)
