"""Day sketches (counts/sketches.py): the rollup keeps each closed day's HLLs as rows, and
each is the HLL ingest made, a value whose bitmap stood in for its HLL included."""

import io
import zlib

from django.core.management import call_command

from analytics import dimensions
from analytics.counts import fold, sketches
from analytics.models import DaySketch
from analytics.rollups import jobs
from analytics.store import keys
from analytics.store.scratch import scratch
from tests.test_segments import history


def _count(r, data: bytes) -> int:
    r.set("test:sketch", zlib.decompress(data))
    try:
        return r.pfcount("test:sketch")
    finally:
        r.delete("test:sketch")


def test_each_closed_days_hlls_are_kept_as_sketches_that_count_the_same(site, r):
    info, brute, days = history(r, site, 5, visitors=120)
    call_command("rollup", "--from", days[0].isoformat(), stdout=io.StringIO(), stderr=io.StringIO())
    day = days[-1]
    stored = {row.field: bytes(row.sketch) for row in DaySketch.objects.filter(site=site, date=day)}
    assert _count(r, stored[sketches.SITE]) == r.pfcount(keys.site_visitors(info.id, day)) == len(brute.active[day])
    only = fold.bitmap_only(r, info.id, [day])[day]
    assert only  # (the history has values whose bitmap stands in for their HLL)
    for name in only:
        assert _count(r, stored[name]) == r.bitcount(keys.dimension_bitmap(info.id, day, name)), name
    assert not any(r.exists(keys.dimension_visitors(info.id, day, name)) for name in only)  # (built in scratch keys)
    page = dimensions.field("page", "/pricing")
    assert _count(r, stored[page]) == r.pfcount(keys.page_visitors(info.id, day, "/pricing"))
    fields = sketches.day_fields(r, info.id, [day])[day]  # (visit pages, exit pages: counts, no HLL)
    assert set(stored) == {f for f in fields if f in only or r.exists(sketches.hll_key(info.id, day, f))}


def test_the_five_minute_job_leaves_yesterdays_sketches_to_the_nightly_one(site, r):
    info, _, days = history(r, site, 6, visitors=40)
    today = info.today()
    jobs.rollup(r, site, days[0], today, today=today, sketch=False)
    assert not DaySketch.objects.filter(site=site).exists()
    with scratch(r, info.id) as tmp:
        jobs.store_sketches(r, site, [days[0]], set(), tmp)
    assert DaySketch.objects.filter(site=site, date=days[0]).count() > 10
