"""python manage.py purgesite DOMAIN [--yes] [--delete-site]

Removes every Redis key of a site (SCAN + UNLINK in batches, with a progress bar): its
counters, bitmaps, HLLs, visit state, everything under `tally:{<site id>}:`. The Site row,
its API keys and its rolled-up numbers in the database stay unless --delete-site.
"""
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from analytics import keybrowser
from analytics.models import Site
from analytics.store.connection import get_redis


class Command(BaseCommand):
    help = "Delete all Redis keys of a site (and with --delete-site, the site itself)."

    def add_arguments(self, parser):
        parser.add_argument("domain")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        parser.add_argument("--delete-site", action="store_true", help="delete the Site row too, after its keys")
        parser.add_argument("--batch", type=int, default=500, help="keys per SCAN/UNLINK round (default 500)")

    def handle(self, domain, yes=False, delete_site=False, batch=500, **options):
        site = Site.objects.filter(domain=domain.strip().lower()).first()
        if site is None:
            raise CommandError(f"no site {domain!r}")
        what = "all Redis keys" + (" and the site itself" if delete_site else "")
        if not yes:
            answer = input(f"Delete {what} of {site.domain} (site id {site.pk})? Type the domain to confirm: ")
            if answer.strip().lower() != site.domain:
                raise CommandError("not confirmed; nothing deleted")
        with tqdm(unit=" keys", desc=f"purging {site.domain}", file=self.stderr._out) as bar:
            deleted = keybrowser.purge(get_redis(), site.pk, batch=batch, progress=bar.update)
        self.stdout.write(f"Deleted {deleted:,} Redis keys of {site.domain}.")
        if delete_site:
            site.delete()
            self.stdout.write(f"Deleted the site {site.domain}.")
