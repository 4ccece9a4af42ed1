"""Keep a day's HyperLogLogs as sketches (counts/sketches.py) shortly before its keys expire.

expiry.apply() sets each day's EXPIREATs; a family of keys due to expire within
SKETCH_AHEAD (the page keys after keep_page_days, the rest after keep_daily_days, or a
backfill's grace after its rollup) first has its HLLs read into DaySketch rows, once
(DailyMetrics.pages_sketched, daily_sketched). Not at every rollup: a day's keys answer
its queries while they live, so its sketches would be rows no one reads for a year, and
by then the visit values whose bitmap stood in for an HLL have been folded into one
(expiry.fold_due), so a sketch is a GET, not a walk of the bitmap's bits.
"""

from datetime import date, timedelta

import redis

from ..counts import sketches
from ..models import DailyMetrics, DaySketch, Site
from ..store.scratch import scratch
from .rows import upsert

SKETCH_AHEAD = timedelta(days=7)  # (the nightly job runs every night: a week leaves room for outages)


def sketch(r: redis.Redis, site: Site, due: dict[date, set[str]]):
    """Store the sketches of these days' families ("pages", "daily"), and mark them done."""
    if not due:
        return
    rows = {row.date: row for row in DailyMetrics.objects.filter(site=site, date__in=list(due))}
    with scratch(r, site.pk) as tmp:
        for day, families in sorted(due.items()):
            fields = sketches.day_fields(r, site.pk, [day], pages="pages" in families, daily="daily" in families)[day]
            found = sketches.read(r, site.pk, day, fields, tmp)
            made = [(site.pk, day, DaySketch.field_key(name), name, data) for name, data in found.items()]
            upsert(DaySketch, ("site_id", "date", "key", "field", "sketch"), made, unique=3)
            row = rows.get(day)
            if row is not None:
                row.pages_sketched = row.pages_sketched or "pages" in families
                row.daily_sketched = row.daily_sketched or "daily" in families
                row.save(update_fields=["pages_sketched", "daily_sketched"])
