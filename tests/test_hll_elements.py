"""What the site's HLLs count: a new site's count dense visitor ids, so a visitor bitmap can
stand in for a day HLL and be folded into one (record_batch.lua); a site whose id map
existed before keeps digests, so unions over days on both sides of the upgrade never
count a returning visitor twice."""

import os
from datetime import UTC, datetime, timedelta

import pytest

from analytics.counts import fold
from analytics.counts.dimensions import dimension_days
from analytics.dimensions import field
from analytics.ingest import Hit, record
from analytics.queries.breakdown import breakdown
from analytics.rollups.jobs import rollup
from analytics.sites import SiteInfo
from analytics.store import idmap, keys
from analytics.store.cluster import site_client
from tests.hll import hll_tolerance
from tests.test_idmap import hits
from tests.test_segments import SOURCES, history, send


def test_a_new_sites_hlls_count_its_visitors_ids(site, r):
    info = SiteInfo.from_model(site)
    record(r, info, hits([f"v{i}" for i in range(50)]), now=datetime.now(UTC))
    assert r.exists(keys.visitor_id_elements(site.pk))
    ids = sorted(idmap.all_ids(r, site.pk).values())
    day = info.today()
    for hll in (keys.site_visitors(site.pk, day), keys.page_visitors(site.pk, day, "/")):
        before = r.pfcount(hll)
        assert r.pfadd(hll, *(str(i) for i in ids)) == 0  # (every id is in already: no register moves)
        assert r.pfcount(hll) == before


def test_a_site_from_before_keeps_counting_digests(site, r):
    info = SiteInfo.from_model(site)
    record(r, info, hits([f"old{i}" for i in range(20)]), now=datetime.now(UTC))
    r.delete(keys.visitor_id_elements(site.pk))  # (as a map made before this version)
    record(r, info, hits([f"old{i}" for i in range(20)] + [f"new{i}" for i in range(30)]), now=datetime.now(UTC))
    assert not r.exists(keys.visitor_id_elements(site.pk))
    hll = keys.site_visitors(site.pk, info.today())
    assert r.pfadd(hll, *(str(i) for i in range(20, 50))) == 1  # (the new visitors went in as digests)
    assert r.pfcount(hll) > 50


def test_daily_salt_sites_count_digests(site, r):
    site.identity_mode = site.IdentityMode.DAILY
    site.save()
    info = SiteInfo.from_model(site)
    record(r, info, [Hit(None, "/", "pageview", f"d{i}".encode()) for i in range(30)], now=datetime.now(UTC))
    hll = keys.site_visitors(site.pk, info.today())
    # (30 digests can share a register: with a salt that changes each day the count is 29 on
    # about one day in forty, so the bound is HLL's, not equality)
    assert abs(r.pfcount(hll) - 30) <= hll_tolerance(30)
    assert r.pfadd(hll, *(str(i) for i in range(30))) == 1


# A visit value's bitmap standing in for its day HLL (lib/segments.lua, counts/fold.py).

SOURCE = "source"


def _only(r, site_id, days):
    return fold.bitmap_only(r, site_id, days)


def _union(brute, days, value):
    return set().union(*(brute.by[day, SOURCE, value] for day in days))


def test_values_with_a_bitmap_from_their_first_visitor_keep_no_day_hll(site, r):
    info, brute, days = history(r, site, 5, visitors=150, segment_values=2)
    only = _only(r, site.pk, days)
    assert all(only[day] for day in days)
    for day in days:
        for f in only[day]:
            assert not r.exists(keys.dimension_visitors(site.pk, day, f)), (day, f)
            assert r.sismember(keys.dimension_bitmapped(site.pk, day), f)
        got = dimension_days(r, site.pk, [day])[day]
        for value in SOURCES:
            people = brute.by[day, SOURCE, value]
            if field(SOURCE, value) in only[day]:
                assert got[field(SOURCE, value)]["visitors"] == len(people)  # (the bitmap: exact)
            elif people:
                assert abs(got[field(SOURCE, value)]["visitors"] - len(people)) <= hll_tolerance(len(people))
    # (pages and custom events keep their day HLLs, bitmap or not: fold.ensure_hlls skips them)
    for day in days:
        bitmapped = {m.decode() for m in r.smembers(keys.dimension_bitmapped(site.pk, day))}
        kept = [f for f in bitmapped if f.startswith(fold.KEEP_HLLS)]
        assert kept and not any(f.startswith(fold.KEEP_HLLS) for f in only[day])
        assert all(r.exists(keys.field_visitors(site.pk, day, f)) for f in kept), day


@pytest.mark.parametrize("final", [False, True])
def test_a_values_visitors_over_a_range_are_the_union_with_bitmap_only_days(site, r, final):
    """segment_values=2 of 4 sources: on each day two sources have bitmaps (bitmap-only)
    and two have HLLs, not the same ones every day, so ranges mix the two."""
    info, brute, days = history(r, site, 11, visitors=200, segment_values=2)
    if final:
        rollup(r, site, days[0], days[-1])
    only = _only(r, site.pk, days)
    everywhere = {v for v in SOURCES if all(field(SOURCE, v) in only[d] for d in days if brute.by[d, SOURCE, v])}
    mixed = set(SOURCES) - everywhere
    assert mixed, "the history should mix bitmap-only days and HLL days"
    rows, _ = breakdown(r, info, days[0], days[-1], SOURCE, limit=10)
    got = {row[SOURCE]: row["visitors"] for row in rows}
    for value in SOURCES:
        truth = len(_union(brute, days, value))
        if value in everywhere:
            assert got[value] == truth, value  # (a BITOP OR of its bitmaps)
        else:
            assert abs(got[value] - truth) <= hll_tolerance(truth), (value, got[value], truth)
    # The mixed values' bitmap-only days were folded into HLLs, for good, and count the same.
    after = _only(r, site.pk, days)
    for day in days:
        for value in mixed:
            f = field(SOURCE, value)
            if f in only[day]:
                assert f not in after[day]
                bits = r.bitcount(keys.dimension_bitmap(site.pk, day, f))
                assert abs(r.pfcount(keys.dimension_visitors(site.pk, day, f)) - bits) <= hll_tolerance(bits)
                if final:
                    assert r.ttl(keys.dimension_visitors(site.pk, day, f)) > 0
    # A second read gives the same numbers (nothing left to fold).
    assert breakdown(r, info, days[0], days[-1], SOURCE, limit=10)[0] == rows


def test_a_fold_beside_ingest_keeps_every_visitor(site, r):
    day = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0)
    events = [(day + timedelta(seconds=n), n, "p", "/", "Google", "DE") for n in range(300)]
    send(r, site, events)
    f = field(SOURCE, "Google")
    assert f in _only(r, site.pk, [day.date()])[day.date()]
    r.smove(
        keys.dimension_bitmap_only(site.pk, day.date()), keys.dimension_folding(site.pk, day.date()), f
    )  # (a fold begun...)
    send(r, site, [(day + timedelta(hours=1, seconds=n), 1000 + n, "p", "/", "Google", "DE") for n in range(200)])
    assert f in _only(r, site.pk, [day.date()])[day.date()]  # (...and not ended: readers count the bitmap)
    assert dimension_days(r, site.pk, [day.date()])[day.date()][f]["visitors"] == 500
    assert fold.ensure_hlls(r, site.pk, [(day.date(), f)]) == 1  # (a later fold ends it)
    assert f not in _only(r, site.pk, [day.date()])[day.date()]
    assert abs(r.pfcount(keys.dimension_visitors(site.pk, day.date(), f)) - 500) <= hll_tolerance(500)
    send(r, site, [(day + timedelta(hours=2, seconds=n), 2000 + n, "p", "/", "Google", "DE") for n in range(100)])
    assert abs(r.pfcount(keys.dimension_visitors(site.pk, day.date(), f)) - 600) <= hll_tolerance(
        600
    )  # (ingest adds to it now)


def test_a_value_given_its_bitmap_after_its_first_visitors_keeps_its_hll(site, r):
    site.segment_values = 1
    site.save()
    day = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0)
    send(r, site, [(day + timedelta(seconds=n), n, "p", "/", "Google" if n % 2 else "Bing", "DE") for n in range(100)])
    site.segment_values = 5  # (raised at noon)
    site.save()
    send(r, site, [(day + timedelta(hours=2, seconds=n), 1000 + n, "p", "/", "Google", "DE") for n in range(50)])
    d = day.date()
    late = field(SOURCE, "Google")  # (Bing took the one bitmap: the same weight, the first name)
    assert r.sismember(keys.dimension_bitmap_only(site.pk, d), field(SOURCE, "Bing"))
    assert r.sismember(keys.dimension_bitmapped(site.pk, d), late)
    assert late not in _only(r, site.pk, [d])[d]
    assert abs(r.pfcount(keys.dimension_visitors(site.pk, d, late)) - 100) <= hll_tolerance(100)
    assert abs(dimension_days(r, site.pk, [d])[d][late]["visitors"] - 100) <= hll_tolerance(100)


def test_a_site_whose_hlls_count_digests_keeps_every_hll(site, r):
    r.set(keys.visitor_id_counter(site.pk), 1)  # (an id map from before this version)
    info, brute, days = history(r, site, 5, visitors=100, segment_values=2)
    assert not r.exists(keys.visitor_id_elements(site.pk))
    assert not any(_only(r, site.pk, days).values())
    for day in days:
        for value in SOURCES:
            if brute.by[day, SOURCE, value]:
                assert r.exists(keys.dimension_visitors(site.pk, day, field(SOURCE, value)))


def test_bitmap_only_values_are_folded_before_their_bitmaps_expire(site, r, no_grace):
    info, brute, days = history(r, site, 17, visitors=200, keep_segment_days=3)
    early = {day: _only(r, site.pk, [day])[day] for day in days}
    assert all(early.values())
    rollup(r, site, days[0], days[-1])
    today = info.today()
    for day in days:
        due = day + timedelta(days=3) <= today
        assert bool(_only(r, site.pk, [day])[day]) != due, day
        for f in early[day]:
            if due:  # (folded: the HLL counts its visitors; the bitmap goes at the midnight keep_segment_days says)
                assert r.ttl(keys.dimension_bitmap(site.pk, day, f)) <= 86_400
                value = f.split("\x1f")[1]
                truth = len(brute.by[day, SOURCE, value]) if f.startswith(SOURCE) else None
                if truth is not None:
                    assert abs(r.pfcount(keys.dimension_visitors(site.pk, day, f)) - truth) <= hll_tolerance(truth)
            else:  # (not yet: the bitmap stays until the fold, whatever keep_segment_days says)
                assert r.ttl(keys.dimension_bitmap(site.pk, day, f)) > 3 * 86_400
    assert [d.decode() for d in r.zrange(keys.fold_due(site.pk), 0, -1)] == [
        day.isoformat() for day in days if day + timedelta(days=3) > today
    ]
    rows, _ = breakdown(r, info, days[0], days[-1], SOURCE, limit=10)
    for row in rows:
        truth = len(_union(brute, days, row[SOURCE]))
        assert abs(row["visitors"] - truth) <= hll_tolerance(truth)


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("TALLY_TEST_CLUSTER", "") not in ("", "0") or os.environ.get("TALLY_REDIS_SERVER") == "redis6",
    reason="bytes a key, a minute a leg: measured on Valkey 9.1 (the default; a cluster adds none) and Redis 8.2, "
    "the newest; Redis 6.2, the oldest supported, is not held to the budget",
)
def test_a_day_of_300000_new_visitors_with_every_dimension_grows_redis_by_at_most_32_bytes_each(site, r):
    """Issue 13's budget (32 bytes) with everything a day writes: ids, first days, day bitmaps, site,
    page and value HLLs, the filter bitmaps (compacted, as the rollups leave them) and the
    dimension tables, for the demo's mixes of sources, devices and places; by MEMORY USAGE
    of every key but the open visits (they expire 1.5 hours after a visit's last event).
    `make bench` prints the figure (and INFO's) for the same day."""
    from analytics.management.commands.demo import new_visitors_day
    from analytics.rollups.compaction import compact_days

    info = SiteInfo.from_model(site)
    start = datetime.combine(info.today(), datetime.min.time(), tzinfo=UTC)
    n = 300_000
    now = datetime.now(UTC)
    hits_ = new_visitors_day(12, start, max(60, int((now - start).total_seconds()) - 600), n)
    for i in range(0, len(hits_), 1000):
        record(r, info, hits_[i : i + 1000], now=now)
    del hits_
    compact_days(r, site.pk, [info.today()])
    node = site_client(r, site.pk)
    names = [
        k
        for k in node.scan_iter(match=keys.site_prefix(site.pk) + "*", count=1000)
        if b":sess" not in k and b":pattern:" not in k  # (open visits; the rate screen's open windows)
    ]
    pipe = node.pipeline(transaction=False)
    for name in names:
        pipe.memory_usage(name, samples=0)
    total = sum(size or 0 for size in pipe.execute())
    # A generous bound: measured 29.2 on Valkey 9.1 (the default), 32.3 on Redis 8.2, whose
    # jemalloc rounds each string up to its size class; the day was 32.4 on Valkey before
    # the values' bitmaps stood in for their HLLs, 41.8 before the packed id map.
    assert total / n <= 36, f"{total / n:.1f} bytes per visitor"
