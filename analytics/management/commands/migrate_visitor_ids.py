"""python manage.py migrate_visitor_ids [DOMAIN ...]

Brings the visitor-id maps of earlier versions to the present layout, a batch at a time,
while Tally runs (ingest moves a returning visitor itself, this moves the rest); every
site without DOMAIN; ids do not change:
- the maps kept before the bucketed layout (one big hash per site, 53-80 bytes a visitor)
  move into buckets (analytics/store/scripts/lib/idmap.lua);
- buckets kept as small hashes (keyed by 10 bytes of the digest, ~18 bytes a visitor, or 7,
  ~15) become packed strings of 7-byte records (~11);
- the first days seen kept as a u16 per id (2 bytes a visitor) become runs of ids
  (analytics/store/scripts/lib/firstdays.lua).
"""

from django.core.management.base import BaseCommand
from tqdm import tqdm

from analytics.models import Site
from analytics.store import firstdays, idmap
from analytics.store.connection import get_redis


class Command(BaseCommand):
    help = "Bring the visitor-id maps of earlier versions to the present layout (ids unchanged)."

    def add_arguments(self, parser):
        parser.add_argument("domains", nargs="*")

    def handle(self, domains, **options):
        sites = Site.objects.filter(domain__in=[d.strip().lower() for d in domains]) if domains else Site.objects.all()
        r = get_redis()
        for site in sites.order_by("pk"):
            with tqdm(unit=" visitors", desc=site.domain, file=self.stderr._out) as bar:
                moved = idmap.migrate(r, site.pk, progress=bar.update)
                packed = idmap.pack(r, site.pk, progress=bar.update)
            with tqdm(unit=" ids", desc=f"{site.domain}, first days", file=self.stderr._out) as bar:
                days = firstdays.migrate(r, site.pk, progress=bar.update)
            self.stdout.write(
                f"{site.domain}: {moved:,} visitor ids moved into buckets, {packed:,} packed; "
                f"first days of {days:,} ids into runs."
            )
