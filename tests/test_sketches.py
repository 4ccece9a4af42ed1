"""Day sketches (counts/sketches.py, rollups/sketching.py): a day's HLLs are kept as rows
shortly before its keys expire, once per family, and each is the HLL ingest made, a value
whose bitmap stood in for its HLL included."""

import io
import zlib
from datetime import UTC, datetime, time, timedelta

from django.core.management import call_command

from analytics import dimensions
from analytics.counts import fold, sketches
from analytics.models import DailyMetrics, DaySketch
from analytics.rollups import expiry
from analytics.store import keys
from tests.test_segments import history


def _count(r, data: bytes) -> int:
    r.set("test:sketch", zlib.decompress(data))
    try:
        return r.pfcount("test:sketch")
    finally:
        r.delete("test:sketch")


def test_a_day_is_sketched_before_its_keys_expire_and_not_before_it_is_due(site, r):
    info, brute, days = history(r, site, 5, visitors=120)
    call_command("rollup", "--from", days[0].isoformat(), stdout=io.StringIO(), stderr=io.StringIO())
    assert not DaySketch.objects.filter(site=site).exists()  # (its keys live for months: nothing to keep yet)
    day = days[0]  # (the oldest: past any policy of 2 days)
    only = fold.bitmap_only(r, info.id, [day])[day]
    assert only  # (the history has values whose bitmap stands in for their HLL)
    live = {
        "site": r.pfcount(keys.site_visitors(info.id, day)),
        "page": r.pfcount(keys.page_visitors(info.id, day, "/pricing")),
        **{name: r.bitcount(keys.dimension_bitmap(info.id, day, name)) for name in only},
    }
    fields = sketches.day_fields(r, info.id, [day])[day]  # (visit pages, exit pages: counts, no HLL)
    kept = {f for f in fields if f in only or r.exists(sketches.hll_key(info.id, day, f))}
    for d in days:  # (rolled up the night after: no import's grace)
        DailyMetrics.objects.filter(site=site, date=d).update(
            updated=datetime.combine(d + timedelta(days=1), time(1), tzinfo=UTC)
        )
    site.keep_page_days = site.keep_daily_days = site.keep_segment_days = 2  # (every day's keys now go)
    site.save()
    expiry.apply_all(r, site, datetime.now(UTC).date())
    assert not r.exists(keys.site_visitors(info.id, day))
    stored = {row.field: bytes(row.sketch) for row in DaySketch.objects.filter(site=site, date=day)}
    assert set(stored) == kept
    assert _count(r, stored[sketches.SITE]) == live["site"] == len(brute.active[day])
    assert _count(r, stored[dimensions.field("page", "/pricing")]) == live["page"]
    for name in only:
        assert _count(r, stored[name]) == live[name], name
    assert all(DailyMetrics.objects.filter(site=site, date=d).get().daily_sketched for d in days)
    before = DaySketch.objects.filter(site=site).count()
    expiry.apply_all(r, site, datetime.now(UTC).date())  # (once: the keys are gone, the rows stay)
    assert DaySketch.objects.filter(site=site).count() == before


def test_a_second_file_of_a_backfilled_day_is_in_its_sketches(site, r, tmp_path):
    """A backfill's day is sketched at its rollup (its keys go 48 h after); a second file of
    the same day rolls it up again and its sketches are taken again, with both files'
    visitors: a union over such days counts them all."""
    from analytics.models import DailyMetrics
    from tests.test_history import Truth, log_lines, write_log
    from tests.test_import_log import import_

    first = datetime.now(UTC).date() - timedelta(days=site.keep_daily_days + 30)
    lines = log_lines(first, 4, seed=4, people=150)
    truth = Truth(lines)
    for name, part in (("a.log", lines[::2]), ("b.log", lines[1::2])):  # (log rotation: the same days twice)
        import_("--site", site.domain, write_log(tmp_path / name, part))
        if name == "a.log":
            assert DailyMetrics.objects.get(site=site, date=first).daily_sketched
    stored = DaySketch.objects.get(site=site, date=first, key=DaySketch.field_key(sketches.SITE))
    assert _count(r, bytes(stored.sketch)) == len(truth.active[first])
