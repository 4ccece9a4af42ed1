"""The engine (ingest.record + queries) against brute force over the same events."""

import random
import threading
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

from analytics import queries
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.sites import SiteInfo
from analytics.store import idmap, keys
from recommendations import bloom
from tests.hll import hll_tolerance

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def info(site):
    return SiteInfo.from_model(site)


def visitor(n):
    return identity_source(None, f"visitor-{n}", None, None)


def test_it_counts_dau_new_visitors_and_pageviews_exactly(site, r):
    rng = random.Random(7)
    start = date(2026, 11, 1)
    events = []  # (day, visitor number, path)
    for _ in range(5000):
        day = start + timedelta(days=rng.randrange(10))
        events.append((day, rng.randrange(800), f"/p/{rng.randrange(30)}"))
    events.sort()  # arrive in time order, as live traffic does
    s = info(site)
    for i in range(0, len(events), 700):
        chunk = events[i : i + 700]
        hits = [Hit(datetime(d.year, d.month, d.day, 10, tzinfo=UTC), p, "pageview", visitor(v)) for d, v, p in chunk]
        record(r, s, hits, now=NOW)

    # brute force
    active, pageviews, first_day = defaultdict(set), defaultdict(int), {}
    for day, v, _ in events:
        active[day].add(v)
        pageviews[day] += 1
        first_day.setdefault(v, day)
    new = defaultdict(int)
    for _v, day in first_day.items():
        new[day] += 1

    rows = queries.timeseries(r, s, start, start + timedelta(days=11))
    assert len(rows) == 12
    for row in rows:
        day = date.fromisoformat(row["date"])
        assert row["dau"] == len(active[day])
        assert row["new_visitors"] == new[day]
        assert row["pageviews"] == pageviews[day]
        assert abs(row["visitors"] - len(active[day])) <= hll_tolerance(len(active[day]))
    assert rows[-1] == {"date": "2026-11-12", "visitors": 0, "pageviews": 0, "dau": 0, "new_visitors": 0}
    # dense ids: exactly one per distinct visitor
    assert int(r.get(keys.visitor_id_counter(site.id))) == len(first_day)


def test_hll_visitors_within_two_percent_at_ten_thousand(site, r):
    s = info(site)
    hits = [Hit(None, "/", "pageview", visitor(n)) for n in range(10_000)]
    for i in range(0, len(hits), 1000):
        record(r, s, hits[i : i + 1000], now=NOW)
    (row,) = queries.timeseries(r, s, NOW.date(), NOW.date())
    assert row["dau"] == 10_000
    assert row["pageviews"] == 10_000
    assert abs(row["visitors"] - 10_000) <= hll_tolerance(10_000)
    (page,) = queries.top_pages(r, s, NOW.date(), NOW.date())
    assert abs(page["visitors"] - 10_000) <= hll_tolerance(10_000)


def test_it_buckets_by_the_sites_local_day(make_site, r):
    site, _ = make_site("ny.example", timezone="America/New_York")
    s = info(site)
    # 03:00 UTC on the 21st is 22:00 on the 20th in New York
    record(r, s, [Hit(datetime(2026, 11, 21, 3, tzinfo=UTC), "/", "pageview", visitor(1))], now=NOW)
    record(r, s, [Hit(datetime(2026, 11, 21, 6, tzinfo=UTC), "/", "pageview", visitor(2))], now=NOW)
    rows = {row["date"]: row for row in queries.timeseries(r, s, date(2026, 11, 20), date(2026, 11, 21))}
    assert rows["2026-11-20"]["dau"] == 1
    assert rows["2026-11-21"]["dau"] == 1


def test_a_returning_visitor_is_new_only_on_the_first_day(site, r):
    s = info(site)
    for day in (1, 2, 3):
        record(r, s, [Hit(datetime(2026, 11, day, 9, tzinfo=UTC), "/", "pageview", visitor(1))], now=NOW)
    rows = queries.timeseries(r, s, date(2026, 11, 1), date(2026, 11, 3))
    assert [row["new_visitors"] for row in rows] == [1, 0, 0]
    assert [row["dau"] for row in rows] == [1, 1, 1]


def test_a_batch_spanning_days_marks_new_on_the_earliest(site, r):
    s = info(site)
    hits = [Hit(datetime(2026, 11, day, 9, tzinfo=UTC), "/", "pageview", visitor(1)) for day in (3, 1, 2)]
    record(r, s, hits, now=NOW)
    rows = queries.timeseries(r, s, date(2026, 11, 1), date(2026, 11, 3), ["new_visitors"])
    assert [row["new_visitors"] for row in rows] == [1, 0, 0]


def test_daily_salt_makes_the_same_person_new_every_day(make_site, r):
    site, _ = make_site("private.example", identity_mode="daily")
    s = info(site)
    for day in (1, 2):
        hits = [Hit(datetime(2026, 11, day, h, tzinfo=UTC), "/", "pageview", visitor(1)) for h in (8, 9)]
        record(r, s, hits, now=NOW)
    rows = queries.timeseries(r, s, date(2026, 11, 1), date(2026, 11, 2))
    assert [row["dau"] for row in rows] == [1, 1]
    assert [row["new_visitors"] for row in rows] == [None, None]
    # the two days' digests differ: the day maps hold different members
    day1 = r.hkeys(keys.visitor_ids(site.id, date(2026, 11, 1)))
    day2 = r.hkeys(keys.visitor_ids(site.id, date(2026, 11, 2)))
    assert len(day1) == len(day2) == 1 and day1 != day2
    assert 0 < r.ttl(keys.visitor_ids(site.id, date(2026, 11, 1))) <= 2 * 86400
    assert not r.exists(keys.new_visitors(site.id, date(2026, 11, 1)))


def test_identity_prefers_user_id_then_visitor_then_ip_and_agent(site, r):
    s = info(site)
    sources = [
        identity_source("u1", "v1", "1.2.3.4", "UA"),
        identity_source("u1", "v2", "5.6.7.8", "UA2"),  # same user_id: same person
        identity_source(None, "v1", "1.2.3.4", "UA"),  # visitor id: another person
        identity_source(None, None, "1.2.3.4", "UA"),  # ip + agent: a third
        identity_source(None, None, "1.2.3.4", "UA"),
        identity_source(None, None, "1.2.3.4", "Other UA"),  # a fourth
    ]
    record(r, s, [Hit(None, "/", "pageview", src) for src in sources], now=NOW)
    (row,) = queries.timeseries(r, s, NOW.date(), NOW.date(), ["dau"])
    assert row["dau"] == 4


def test_no_raw_identity_reaches_redis(site, r):
    record(r, info(site), [Hit(None, "/", "pageview", identity_source(None, None, "203.0.113.9", "Agent/1"))], now=NOW)
    for key in r.scan_iter("*"):
        assert b"203.0.113.9" not in key
        if r.type(key) == b"hash":
            for field, value in r.hgetall(key).items():
                assert b"203.0.113.9" not in field + value


def test_bots_are_dropped_and_counted(site, r):
    s = info(site)
    hits = [Hit(None, "/", "pageview", visitor(1)), Hit(None, "/", "pageview", visitor(2), bot=True)]
    result = record(r, s, hits, now=NOW)
    assert result == (1, 1)
    assert int(r.hget(keys.dropped(site.id, NOW.date()), "user-agent")) == 1
    (row,) = queries.timeseries(r, s, NOW.date(), NOW.date())
    assert row["pageviews"] == 1 and row["dau"] == 1


def test_custom_events_are_counted_apart_from_pageviews(site, r):
    s = info(site)
    hits = [Hit(None, "/buy", "Signup", visitor(n % 3)) for n in range(7)] + [Hit(None, "/", "pageview", visitor(9))]
    record(r, s, hits, now=NOW)
    assert r.smembers(keys.events_index(site.id, NOW.date())) == {b"Signup"}
    assert r.get(keys.event_count(site.id, NOW.date(), "Signup")) == b"7"
    assert r.pfcount(keys.event_visitors(site.id, NOW.date(), "Signup")) == 3
    (row,) = queries.timeseries(r, s, NOW.date(), NOW.date())
    assert row == {"date": NOW.date().isoformat(), "visitors": 4, "pageviews": 1, "dau": 4, "new_visitors": 4}


def test_it_reloads_the_script_after_the_server_forgets_it(site, r):
    s = info(site)
    record(r, s, [Hit(None, "/", "pageview", visitor(1))], now=NOW)
    r.script_flush()
    record(r, s, [Hit(None, "/", "pageview", visitor(2)), Hit(None, "/", "pageview", visitor(2))], now=NOW)
    (row,) = queries.timeseries(r, s, NOW.date(), NOW.date())
    assert row["dau"] == 2 and row["pageviews"] == 3 and row["new_visitors"] == 2


def test_pageviews_with_a_user_id_mark_their_pages_seen_after_the_server_forgets_the_script(site, r):
    """The Bloom add rides in ingest's pipeline; a server that does not know the script
    (restarted, or never asked) gets it loaded and the add redone."""
    s = info(site)
    r.script_flush()
    record(r, s, [Hit(None, "/a", "pageview", visitor(1), user="ann")], now=NOW)
    r.script_flush()
    record(r, s, [Hit(None, "/b", "pageview", visitor(1), user="ann")], now=NOW)
    digest = bloom.user_digest(s.salt, "ann")
    assert bloom.seen(r, site.id, digest, ["/a", "/b", "/c"], s.bloom, native=False) == [True, True, False]


def test_concurrent_batches_give_each_visitor_one_id(site, r):
    s = info(site)
    errors = []

    def worker(offset):
        try:
            for i in range(10):
                hits = [Hit(None, "/", "pageview", visitor((offset + i * 50 + n) % 600)) for n in range(100)]
                record(r, s, hits, now=NOW)
        except Exception as e:  # pragma: no cover - surfaced below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k * 37,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ids = list(idmap.all_ids(r, site.id).values())
    assert sorted(ids) == list(range(len(ids)))  # dense and unique
    assert int(r.get(keys.visitor_id_counter(site.id))) == len(ids)
    (row,) = queries.timeseries(r, s, NOW.date(), NOW.date(), ["dau", "new_visitors"])
    assert row["dau"] == row["new_visitors"] == len(ids)


def test_script_handles_more_visitors_than_one_lua_call_takes(site, r):
    s = info(site)
    hits = [Hit(None, "/", "pageview", visitor(n)) for n in range(2500)]
    record(r, s, hits, now=NOW)
    (row,) = queries.timeseries(r, s, NOW.date(), NOW.date(), ["dau", "new_visitors"])
    assert row == {"date": NOW.date().isoformat(), "dau": 2500, "new_visitors": 2500}


def test_realtime_counts_the_last_five_minutes(site, r):
    s = info(site)
    record(r, s, [Hit(NOW - timedelta(minutes=m), "/", "pageview", visitor(m)) for m in range(8)], now=NOW)
    assert queries.realtime_visitors(r, s, NOW) == 5
    ttl = r.ttl(keys.realtime(site.id, NOW))
    assert 0 < ttl <= 7200
    # old backfilled events make no realtime keys at all
    record(r, s, [Hit(NOW - timedelta(days=3), "/", "pageview", visitor(99))], now=NOW)
    assert len(list(r.scan_iter(keys.site_prefix(site.id) + "rt:*"))) == 8


def test_top_pages_match_brute_force(site, r):
    rng = random.Random(3)
    s = info(site)
    truth_visitors, truth_views = defaultdict(set), defaultdict(int)
    hits = []
    for _ in range(3000):
        day, v, page = rng.randrange(1, 6), rng.randrange(400), f"/page/{min(rng.randrange(12), rng.randrange(12))}"
        hits.append(Hit(datetime(2026, 11, day, 8, tzinfo=UTC), page, "pageview", visitor(v)))
        truth_visitors[page].add(v)
        truth_views[page] += 1
    record(r, s, hits, now=NOW)
    pages = queries.top_pages(r, s, date(2026, 11, 1), date(2026, 11, 5), limit=100)
    assert {p["page"] for p in pages} == set(truth_views)
    for p in pages:
        assert p["pageviews"] == truth_views[p["page"]]
        assert abs(p["visitors"] - len(truth_visitors[p["page"]])) <= hll_tolerance(len(truth_visitors[p["page"]]))
    assert queries.top_pages(r, s, date(2026, 11, 1), date(2026, 11, 5), limit=3) == pages[:3]


def test_every_key_carries_the_sites_hash_tag(site, r):
    record(r, info(site), [Hit(None, "/", "pageview", visitor(1)), Hit(None, "/", "Goal", visitor(1))], now=NOW)
    all_keys = list(r.scan_iter("*"))
    assert all_keys
    assert all(key.startswith(f"tally:{{{site.id}}}:".encode()) for key in all_keys)


def test_a_batch_of_many_pages_from_one_visitor(site, r):
    site.max_event_names_per_day = 5_000  # (above the default quota: this is about chunking)
    site.pattern_pageviews = 0  # (10,000 pageviews at once would be an inhuman rate: ingest/patterns.py)
    site.save()
    s = info(site)
    hits = [Hit(None, f"/p/{n}", "pageview", visitor(1)) for n in range(10_000)]
    hits += [Hit(None, "/", f"Event{n}", visitor(1)) for n in range(2_500)]
    record(r, s, hits, now=NOW)
    (row,) = queries.timeseries(r, s, NOW.date(), NOW.date(), ["dau", "pageviews"])
    assert row == {"date": NOW.date().isoformat(), "dau": 1, "pageviews": 10_000}
    assert r.scard(keys.pages_index(site.id, NOW.date())) == 10_000
    assert r.scard(keys.events_index(site.id, NOW.date())) == 2_500


GARBAGE = """local before = collectgarbage('count')
for i = 1, 200000 do local t = {i} end
return math.floor(collectgarbage('count') - before)"""


def test_a_big_call_leaves_luas_collector_running(site, r):
    """record_batch.lua stops Lua's collector during a call of 100+ visitors and must start
    it again at the end: stopped, the ~11 MB of garbage below would all stay; running, its
    cycles free most of it as it grows."""
    s = info(site)
    record(r, s, [Hit(NOW, "/", "pageview", visitor(n)) for n in range(150)], now=NOW)
    grown_kb = r.eval(GARBAGE, 1, keys.pageviews(site.id, NOW.date()))  # (the site's key: its node, on a cluster)
    assert grown_kb < 5000
