"""python manage.py purgesite (DOMAIN | --site-id ID) [--yes] [--delete-site]

Removes every Redis key of a site (SCAN + UNLINK in batches, with a progress bar): its
counters, bitmaps, HLLs, visit state, everything under `tally:{<site id>}:`. The Site row,
its API keys and its rolled-up numbers in the database stay unless --delete-site.

Deleting a site purges its keys by itself (analytics.site_deletion); `--site-id` is for
the keys of a site deleted while Redis was out, whose row, and so domain, is gone.
"""

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from analytics import keybrowser
from analytics.models import Site
from analytics.store.connection import get_redis


class Command(BaseCommand):
    help = "Delete all Redis keys of a site (and with --delete-site, the site itself)."

    def add_arguments(self, parser):
        parser.add_argument("domain", nargs="?")
        parser.add_argument(
            "--site-id", type=int, help="the site by id; also a deleted site, whose keys were left behind"
        )
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        parser.add_argument("--delete-site", action="store_true", help="delete the Site row too, after its keys")
        parser.add_argument("--batch", type=int, default=500, help="keys per SCAN/UNLINK round (default 500)")

    def handle(self, domain=None, site_id=None, yes=False, delete_site=False, batch=500, **options):
        if (domain is None) == (site_id is None):
            raise CommandError("name one site: DOMAIN or --site-id ID")
        if domain is not None:
            site = Site.objects.filter(domain=domain.strip().lower()).first()
            if site is None:
                raise CommandError(f"no site {domain!r}")
            site_id = site.pk
        else:
            site = Site.objects.filter(pk=site_id).first()
        name = site.domain if site else f"deleted site {site_id}"
        what = "all Redis keys" + (" and the site itself" if delete_site and site else "")
        if not yes:
            answer = input(
                f"Delete {what} of {name} (site id {site_id})? Type the {'domain' if site else 'id'} to confirm: "
            )
            if answer.strip().lower() != (site.domain if site else str(site_id)):
                raise CommandError("not confirmed; nothing deleted")
        with tqdm(unit=" keys", desc=f"purging {name}", file=self.stderr._out) as bar:
            deleted = keybrowser.purge(get_redis(), site_id, batch=batch, progress=bar.update)
        self.stdout.write(f"Deleted {deleted:,} Redis keys of {name}.")
        if delete_site and site:
            site.delete()
            self.stdout.write(f"Deleted the site {site.domain}.")
