"""python manage.py recount_bloom [DOMAIN ...]

Sets the books of each site's Bloom memory budget right from the filters Redis holds
(recommendations.bloom.recount): filters made before the budget existed go on them, and
filters whose keys were removed by hand come off. Every site when none is named. SCAN
walks the whole keyspace of the site's server: a command for an upgrade or a repair, not
for a schedule (the books keep themselves right as filters are made and expire).
"""

from django.core.management.base import BaseCommand, CommandError

from analytics.models import Site
from analytics.store.connection import get_redis
from recommendations import bloom


class Command(BaseCommand):
    help = "Recount each site's Bloom filters against its memory budget."

    def add_arguments(self, parser):
        parser.add_argument("domains", nargs="*", help="the sites (default: every site)")

    def handle(self, domains=(), **options):
        sites = (
            list(Site.objects.filter(domain__in=[d.strip().lower() for d in domains]))
            if domains
            else list(Site.objects.all())
        )
        missing = {d.strip().lower() for d in domains} - {site.domain for site in sites}
        if missing:
            raise CommandError(f"no site {', '.join(sorted(missing))}")
        r = get_redis()
        for site in sites:
            config = bloom.BloomConfig.for_site(site)
            bloom.recount(r, site.pk, config)
            stats = bloom.site_stats(r, site.pk, config, max_filters=0)
            state = f"; full since {stats.full_since}" if stats.full_since else ""
            self.stdout.write(
                f"{site.domain}: {stats.filters:,} filters, {stats.memory_bytes / 2**20:,.1f} MB of "
                f"{config.budget_bytes / 2**20:,.0f} MB{state}"
            )
