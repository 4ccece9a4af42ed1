"""python manage.py rollup [--site DOMAIN] [--from DATE --to DATE]

Runs the same rollups as the beat jobs, at once, with a progress bar: for operators after
an outage, and after a backfill. Without dates it rolls every day from the last final one
through today (what the scheduled jobs would do); with dates, exactly that range. Then,
as the nightly job does, each site's breakdowns read lately are counted once, so their
parts over the closed days are ready (analytics/queries/warm.py).
"""

from datetime import date

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from analytics import rollups
from analytics.models import Site
from analytics.periods import days_between
from analytics.queries import warm
from analytics.sites import SiteInfo
from analytics.store.connection import get_redis

CHUNK_DAYS = 7


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"not a date: {value!r} (expected YYYY-MM-DD)") from None


class Command(BaseCommand):
    help = "Roll up raw counters into stored daily metrics, period visitors and retention."

    def add_arguments(self, parser):
        parser.add_argument("--site", help="domain of one site (default: every site)")
        parser.add_argument("--from", dest="start", type=_date, help="first day, YYYY-MM-DD (site's local date)")
        parser.add_argument("--to", dest="end", type=_date, help="last day, YYYY-MM-DD (default: today)")

    def handle(self, site=None, start=None, end=None, **options):
        sites = Site.objects.all()
        if site:
            sites = sites.filter(domain=site.strip().lower())
            if not sites:
                raise CommandError(f"no site {site!r}")
        r = get_redis()
        plan = []
        for s in sites:
            today = SiteInfo.from_model(s).today()
            last = min(end or today, today)
            first = start or max(rollups.first_unfinished_day(s), rollups.earliest_day(s, today))
            # (an older --from is taken: rollup() computes the days whose keys are there, any age)
            if first > last:
                continue
            days = days_between(first, last)
            plan += [(s, days[i : i + CHUNK_DAYS], today) for i in range(0, len(days), CHUNK_DAYS)]
        if not plan:
            self.stdout.write("Nothing to roll up.")
            return
        total = sum(len(days) for _, days, _ in plan)
        with tqdm(total=total, unit="day", desc="rolling up", file=self.stderr._out) as bar:
            for s, days, today in plan:
                bar.set_postfix_str(s.domain)
                rollups.rollup_when_free(r, s, days[0], days[-1], today=today)
                bar.update(len(days))
        self.stdout.write(f"Rolled up {total} site-days for {len({s.pk for s, _, _ in plan})} site(s).")
        for s in {s.pk: s for s, _, _ in plan}.values():
            if ran := warm.warm(r, SiteInfo.from_model(s)):
                seconds = sum(t for _, _, t in ran)
                self.stdout.write(f"{s.domain}: {len(ran)} breakdowns read lately made ready in {seconds:.2f} s.")
