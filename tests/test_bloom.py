"""Scalable Bloom filters on plain Redis: no false negatives, scaling, the error rate; and
the native backend (RedisBloom's BF.*) held to the same promises on Redis 8.2 with the
module loaded (the `backend` fixture, conftest.py). The site's budget: test_bloom_budget.py."""

import threading

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.sites import SiteInfo
from analytics.store import keys
from recommendations import bloom
from recommendations.bloom import BloomConfig, FilterFull

SMALL = BloomConfig(capacity=50, error_rate=0.01, expansion=2)


def test_items_added_are_seen_and_others_mostly_not(r):
    items = [f"/page/{n}" for n in range(40)]
    assert bloom.add(r, 1, "alice", items, SMALL, native=False) == [True] * 40
    assert bloom.seen(r, 1, "alice", items, SMALL, native=False) == [True] * 40
    assert bloom.add(r, 1, "alice", items[:5], SMALL, native=False) == [False] * 5
    others = bloom.seen(r, 1, "alice", [f"/other/{n}" for n in range(1000)], SMALL, native=False)
    assert sum(others) <= 25  # 1% target; far under this even with sampling noise
    assert bloom.seen(r, 1, "bob", items, SMALL, native=False) == [False] * 40  # per visitor


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=300, unique=True))
def test_there_are_never_false_negatives(r, items):
    r.delete("tally:{9}:bloom:h", "tally:{9}:bloom:h:shape")
    config = BloomConfig(capacity=16, error_rate=0.05, expansion=2)
    bloom.add(r, 9, "h", items, config, native=False)
    assert all(bloom.seen(r, 9, "h", items, config, native=False))


def test_it_scales_at_the_right_counts(r):
    config = BloomConfig(capacity=10, error_rate=0.0001, expansion=3)  # no false positive muddles the counts
    shape_key = "tally:{1}:bloom:s:shape"
    bloom.add(r, 1, "s", [f"i{n}" for n in range(10)], config, native=False)
    assert r.hget(shape_key, "filters") == b"1" and r.hget(shape_key, "last") == b"10"
    bloom.add(r, 1, "s", ["i10"], config, native=False)
    assert r.hget(shape_key, "filters") == b"2" and r.hget(shape_key, "last") == b"1"
    bloom.add(r, 1, "s", [f"i{n}" for n in range(11, 40)], config, native=False)  # 10 + 30 fill two
    assert r.hget(shape_key, "filters") == b"2" and r.hget(shape_key, "items") == b"40"
    bloom.add(r, 1, "s", ["i40"], config, native=False)
    assert r.hget(shape_key, "filters") == b"3"
    size = sum(bloom.shape(config, j)[1] for j in range(3)) // 8
    assert r.strlen("tally:{1}:bloom:s") <= size


def test_nonscaling_refuses_past_capacity(r):
    config = BloomConfig(capacity=5, error_rate=0.01, nonscaling=True)
    bloom.add(r, 1, "n", [f"i{n}" for n in range(5)], config, native=False)
    with pytest.raises(FilterFull, match="does not scale"):
        bloom.add(r, 1, "n", ["i5", "i6"], config, native=False)
    assert bloom.seen(r, 1, "n", ["i0", "i4"], config, native=False) == [True, True]


def test_concurrent_adds_count_each_new_item_once(r):
    config = BloomConfig(capacity=200, error_rate=0.001)
    items = [f"item-{n}" for n in range(300)]
    added = []

    def worker(offset):
        mine = items[offset:] + items[:offset]
        added.append(
            sum(bloom.add(r, 1, "c", mine[i : i + 25], config, native=False).count(True) for i in range(0, 300, 25))
        )

    threads = [threading.Thread(target=worker, args=(k * 71,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # each new item counted once across the four threads (a rare false positive may make
    # one look seen already: then it is counted by nobody, never twice)
    assert sum(added) == int(r.hget("tally:{1}:bloom:c:shape", "items"))
    assert 297 <= sum(added) <= 300


def test_the_observed_error_rate_stays_under_target_before_and_after_scaling(r):
    config = BloomConfig(capacity=2000, error_rate=0.01, expansion=2)
    probes = [f"probe-{n}" for n in range(20_000)]
    bloom.add(r, 1, "fp", [f"item-{n}" for n in range(2000)], config, native=False)  # exactly full
    before = sum(bloom.seen(r, 1, "fp", probes, config, native=False)) / len(probes)
    bloom.add(r, 1, "fp", [f"item-{n}" for n in range(2000, 14_000)], config, native=False)  # 3 sub-filters, full
    after = sum(bloom.seen(r, 1, "fp", probes, config, native=False)) / len(probes)
    assert before <= 0.01 * 1.25 and after <= 0.01 * 1.25, (before, after)


def test_memory_per_item_follows_the_formula(r):
    import math

    config = BloomConfig(capacity=5000, error_rate=0.01)
    bloom.add(r, 1, "m", [f"x{n}" for n in range(5000)], config, native=False)
    bits = -5000 * math.log(0.005) / math.log(2) ** 2  # the first sub-filter's rate: p/2
    assert abs(r.strlen("tally:{1}:bloom:m") * 8 - bits) / bits < 0.01
    assert abs(r.memory_usage("tally:{1}:bloom:m") * 8 - bits) / bits < 0.10


def test_filters_expire_when_idle(r):
    config = BloomConfig(idle_days=2)
    bloom.add(r, 1, "e", ["a"], config, native=False)
    assert 0 < r.ttl("tally:{1}:bloom:e") <= 2 * 86400
    assert 0 < r.ttl("tally:{1}:bloom:e:shape") <= 2 * 86400


def test_site_stats(r):
    config = BloomConfig(capacity=100, error_rate=0.01)
    bloom.add(r, 3, "a", [f"i{n}" for n in range(100)], config, native=False)
    bloom.add(r, 3, "b", [f"i{n}" for n in range(10)], config, native=False)
    stats = bloom.site_stats(r, 3)
    assert stats.filters == 2
    assert stats.memory_bytes > 2 * bloom.shape(config, 0)[1] // 8
    assert 0 < stats.average_fill < 0.5
    assert 0 < stats.expected_error < 0.01


def test_each_backend_forgets_nothing_and_keeps_its_error_rate(backend):
    """Two filters disagree on their false positives by design: each backend is held to
    the promise itself (no false negatives, the target rate on unseen items), through a
    scaling, rather than compared with the other."""
    r, native = backend
    config = BloomConfig(capacity=1000, error_rate=0.01, expansion=2)
    items = [f"/page/{n}" for n in range(3000)]  # fills the first sub-filter and its successor
    added = bloom.add(r, 1, "both", items, config, native=native)
    assert sum(added) >= len(items) * (1 - 2 * config.error_rate)  # new, but for a rare false positive
    assert bloom.seen(r, 1, "both", items, config, native=native) == [True] * len(items)
    probes = [f"/unseen/{n}" for n in range(20_000)]
    rate = sum(bloom.seen(r, 1, "both", probes, config, native=native)) / len(probes)
    assert rate <= 2 * config.error_rate, rate


def test_ingest_marks_pages_seen_in_the_native_filter(native_redis, site):
    """Ingest queues its BF.RESERVE and BF.MADD in its own pipeline; the second batch finds
    the filter there already, which is no error."""
    native_redis.flushall()
    s = SiteInfo.from_model(site)
    ann = identity_source("ann", None, None, None)
    record(
        native_redis, s, [Hit(None, "/a", "pageview", ann, user="ann"), Hit(None, "/b", "pageview", ann, user="ann")]
    )
    record(native_redis, s, [Hit(None, "/c", "pageview", ann, user="ann")])
    digest = bloom.user_digest(s.salt, "ann")
    assert bloom.seen(native_redis, s.id, digest, ["/a", "/b", "/c", "/d"], s.bloom, native=True) == [
        True,
        True,
        True,
        False,
    ]
    assert native_redis.type(keys.bloom(s.id, digest)) == b"MBbloom--"  # the module's type, not the script's string


def test_settings_past_the_size_limit_are_refused_naming_the_largest_allowed(db):
    from django.core.exceptions import ValidationError

    from analytics.models import Site

    huge = Site(domain="huge.example", bloom_capacity=100_000_000, bloom_error_rate=1e-9)  # 557 MB: past Redis's 512 MB
    with pytest.raises(ValidationError) as raised:
        huge.full_clean()
    largest = bloom.max_capacity(1e-9)
    message = " ".join(raised.value.message_dict["bloom_capacity"])
    assert "16 MB" in message and f"{largest:,}" in message
    assert (
        bloom.shape(BloomConfig(largest, 1e-9), 0)[1]
        <= bloom.MAX_FILTER_BITS
        < bloom.shape(BloomConfig(largest + 1, 1e-9), 0)[1]
    )
    Site(domain="edge.example", bloom_capacity=largest, bloom_error_rate=1e-9).full_clean()
    with pytest.raises(ValidationError):
        Site(domain="over.example", bloom_capacity=largest + 1, bloom_error_rate=1e-9).full_clean()


def test_each_backend_refuses_to_make_a_filter_past_the_limit(backend):
    """Settings saved before the check (or straight to the database): the code refuses them
    before Redis allocates anything, and a check finds nothing seen."""
    r, native = backend
    config = BloomConfig(capacity=20_000_000, error_rate=0.01)  # a 26 MB first sub-filter
    with pytest.raises(bloom.FilterTooLarge, match="16 MB"):
        bloom.add(r, 1, "big", ["a", "b"], config, native=native)
    assert bloom.seen(r, 1, "big", ["a", "b"], config, native=native) == [False, False]
    assert list(r.scan_iter(match="*bloom*")) == []


def test_the_script_refuses_a_filter_past_the_limit_itself(backend):
    """Defence in depth: called with such settings anyway, either script makes nothing
    (nor puts anything on the site's books)."""
    r, native = backend
    config = BloomConfig(capacity=20_000_000, error_rate=0.01)
    script, script_keys, args = bloom._call(1, "x", "add", ["a"], config, native)
    assert script.run(r, script_keys, args) == [[-2], 0]
    assert list(r.scan_iter(match="*bloom*")) == []


def test_a_scaling_filter_stops_growing_at_the_limit(r, monkeypatch):
    config = BloomConfig(capacity=100, error_rate=0.01, expansion=2)
    two = bloom.shape(config, 0)[1] + bloom.shape(config, 1)[1]
    monkeypatch.setattr(bloom, "MAX_FILTER_BITS", two)  # room for two sub-filters, not three
    items = [f"i{n}" for n in range(300)]  # fills both
    bloom.add(r, 1, "g", items, config, native=False)
    with pytest.raises(FilterFull, match="size limit"):
        bloom.add(
            r, 1, "g", [f"more{n}" for n in range(50)], config, native=False
        )  # (a false positive or two left room)
    assert r.hget(keys.bloom_shape(1, "g"), "filters") == b"2"
    assert r.strlen(keys.bloom(1, "g")) * 8 <= two
    assert bloom.seen(r, 1, "g", items, config, native=False) == [True] * 300


def test_a_filter_that_fails_leaves_the_page_views_counted_and_no_error(r, site, caplog):
    """Marking pages seen rides in ingest's round trip, after the counts: a failing add (a
    filter's key of another type, left by hand) is logged, never the request's error, which
    would answer an error for counted events and fail their spooled replay every time."""
    s = SiteInfo.from_model(site)
    ann = identity_source("ann", None, None, None)
    digest = bloom.user_digest(s.salt, "ann")
    r.lpush(keys.bloom_shape(s.id, digest), "not a filter")
    recorded = record(
        r, s, [Hit(None, "/a", "pageview", ann, user="ann"), Hit(None, "/b", "pageview", ann, user="ann")]
    )
    assert recorded.accepted == 2
    assert int(r.get(keys.pageviews(s.id, s.today()))) == 2
    assert "marking pages seen for a visitor of site" in caplog.text
