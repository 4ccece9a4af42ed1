"""The site's Bloom budget (recommendations.bloom): all of a site's filters together stay
within it on both backends (the Lua script on the session's server, RedisBloom on Redis
8.2: the `backend` fixture), every page view is counted past it, the visitors who have a
filter keep it, the books follow the filters as they expire, and an operator sees it."""

import dataclasses
import io
import json
import logging
import time

import pytest
from django.core.management.base import CommandError

from analytics import keybrowser
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.sites import SiteInfo
from analytics.store import keys
from analytics.store.cluster import site_client
from recommendations import bloom
from recommendations.bloom import BloomConfig, BudgetFull

SMALL = BloomConfig(capacity=100, error_rate=0.01)  # a first sub-filter of 138 bytes (plain), 256 (RedisBloom)
ROOM_FOR_ABOUT_20 = 20_000  # bytes: ~25 such filters on plain Redis, ~22 on RedisBloom, with their overhead


def pageviews(users, path=None):
    return [
        Hit(None, path or f"/p{n % 7}", "pageview", identity_source(u, None, None, None), user=u)
        for n, u in enumerate(users)
    ]


def digest(info, user):
    return bloom.user_digest(info.salt, user)


def filter_keys(r, site_id):
    """The filters Redis holds for the site (not their shape hashes)."""
    return [
        k
        for k in site_client(r, site_id).scan_iter(match=keys.site_pattern(site_id, "bloom:*"))
        if not k.endswith(b":shape")
    ]


def warnings(caplog):
    return [
        rec.getMessage()
        for rec in caplog.records
        if rec.name == "recommendations.bloom" and rec.levelno == logging.WARNING
    ]


def test_many_visitors_past_the_budget_are_counted_and_the_filters_stay_within_it(backend, site, caplog):
    r, native = backend
    info = dataclasses.replace(
        SiteInfo.from_model(site), bloom=dataclasses.replace(SMALL, budget_bytes=ROOM_FOR_ABOUT_20)
    )
    early = ["ann", "bob", "cy"]
    record(r, info, pageviews(early, "/welcome"))
    crowd = [f"crowd-{n}" for n in range(200)]  # one batch naming 200 new user ids: an attacker's, or a busy day
    with caplog.at_level(logging.INFO, logger="recommendations.bloom"):
        assert record(r, info, pageviews(crowd)).accepted == 200
        assert record(r, info, pageviews(crowd[-50:], "/again")).accepted == 50  # refused again: no second warning

    day = info.today()
    assert int(r.get(keys.pageviews(info.id, day))) == 253  # every page view counted
    assert r.bitcount(keys.active(info.id, day)) == 203  # every visitor too
    stats = bloom.site_stats(r, info.id, info.bloom)
    per_filter = stats.memory_bytes / stats.filters
    assert ROOM_FOR_ABOUT_20 - 2 * per_filter < stats.memory_bytes <= ROOM_FOR_ABOUT_20  # filled, and not past it
    assert 15 < stats.filters == len(filter_keys(r, info.id)) < 30  # the books are what Redis holds
    assert stats.full_since is not None and stats.refused == 203 - stats.filters + 50
    assert (
        len(warnings(caplog)) == 1
        and "reached their budget" in warnings(caplog)[0]
        and "page views are still counted" in warnings(caplog)[0]
    )

    for user in early:  # the visitors under the budget keep their filters, and they still take items
        assert bloom.seen(r, info.id, digest(info, user), ["/welcome", "/elsewhere"], info.bloom, native) == [
            True,
            False,
        ]
        assert bloom.add(r, info.id, digest(info, user), ["/elsewhere"], info.bloom, native) == [True]
    last = crowd[-1]  # no filter: nothing seen, and the seen API says why
    assert bloom.seen(r, info.id, digest(info, last), ["/p3", "/again"], info.bloom, native) == [False, False]
    with pytest.raises(BudgetFull, match="memory budget"):
        bloom.add(r, info.id, digest(info, last), ["/p3"], info.bloom, native)
    assert bloom.site_stats(r, info.id, info.bloom).filters == stats.filters


def test_a_filter_does_not_grow_past_the_budget(backend):
    r, native = backend
    config = dataclasses.replace(
        SMALL, budget_bytes=1000
    )  # the first sub-filter and its overhead fit, a second does not
    items = [f"/i{n}" for n in range(100)]
    assert sum(bloom.add(r, 1, "g", items, config, native)) >= 98  # (a false positive or two: room left for them)
    with pytest.raises(BudgetFull):
        bloom.add(r, 1, "g", [f"/more{n}" for n in range(50)], config, native)
    assert bloom.seen(r, 1, "g", items, config, native) == [True] * 100  # what it holds, it keeps
    assert bloom.site_stats(r, 1, config).memory_bytes <= 1000
    if native:
        assert r.execute_command("BF.INFO", keys.bloom(1, "g"))[b"Number of filters"] == 1
    else:
        assert r.hget(keys.bloom_shape(1, "g"), "filters") == b"1"
    roomy = dataclasses.replace(config, budget_bytes=100_000)  # the operator raises the budget: it grows again
    assert sum(bloom.add(r, 1, "g", [f"/more{n}" for n in range(50)], roomy, native)) >= 48
    assert 1000 < bloom.site_stats(r, 1, roomy).memory_bytes <= 100_000


def test_the_budget_frees_up_as_filters_expire(backend, monkeypatch, caplog):
    """Idle days of a second here: the keys and the books expire at the same moment, so a
    reader sees the room before any add prunes the books, and the next add uses it."""
    r, native = backend
    monkeypatch.setattr(bloom, "DAY_SECONDS", 1)
    config = dataclasses.replace(SMALL, idle_days=1, budget_bytes=3000)  # three filters
    with caplog.at_level(logging.INFO, logger="recommendations.bloom"):
        for user in ("u0", "u1", "u2"):
            bloom.add(r, 1, user, ["/a"], config, native)
        with pytest.raises(BudgetFull):
            bloom.add(r, 1, "u3", ["/a"], config, native)
        live, sizes, _ = keys.bloom_registry(1)
        now = bloom._now_ms(r, 1)
        for user in ("u0", "u1", "u2"):  # the books expire each filter when its keys do
            assert abs(r.zscore(live, user) - now - r.pttl(keys.bloom(1, user))) < 50
        time.sleep(1.2)
        assert filter_keys(r, 1) == []
        stats = bloom.site_stats(r, 1, config)
        assert (stats.filters, stats.memory_bytes) == (0, 0) and r.zcard(live) == 3  # (not pruned yet: read around)
        assert bloom.add(r, 1, "u3", ["/a"], config, native) == [True]
        stats = bloom.site_stats(r, 1, config)
        assert stats.filters == 1 and stats.full_since is None and stats.refused == 0
        assert r.zcard(live) == 1 and r.hlen(sizes) == 1  # the add pruned the expired ones
    messages = [rec.getMessage() for rec in caplog.records if rec.name == "recommendations.bloom"]
    assert len(messages) == 2 and "reached their budget" in messages[0] and "back under 90%" in messages[1]


def test_a_check_keeps_a_filter_alive_on_the_books_too(backend, monkeypatch):
    r, native = backend
    bloom.add(r, 1, "v", ["/a"], SMALL, native)
    live = keys.bloom_registry(1)[0]
    r.zadd(live, {"v": bloom._now_ms(r, 1) + 5000})
    r.pexpire(keys.bloom(1, "v"), 5000)
    bloom.seen(r, 1, "v", ["/a"], SMALL, native, touch=False)  # the dashboard only looks
    assert r.zscore(live, "v") - bloom._now_ms(r, 1) < 6000
    bloom.seen(r, 1, "v", ["/a"], SMALL, native)  # the API's check is the visitor's activity
    assert r.zscore(live, "v") - bloom._now_ms(r, 1) > 179 * 86_400_000
    assert r.pttl(keys.bloom(1, "v")) > 179 * 86_400_000


def keys_memory(r) -> int:
    """What the keys take, their tables included (MEMORY STATS): used_memory would count
    the clients' buffers and the scripts' caches too, which come and go between tests."""
    stats = r.memory_stats()
    tables = sum(
        value.get("overhead.hashtable.main", 0) + value.get("overhead.hashtable.expires", 0)
        for name, value in stats.items()
        if name.startswith("db.") and isinstance(value, dict)
    )
    return stats["dataset.bytes"] + tables


@pytest.mark.single_server  # (the memory of one server)
def test_a_filter_is_charged_about_what_it_costs_redis(backend):
    """FILTER_OVERHEAD is measured: the budget is about Redis's memory, not just the bits."""
    r, native = backend
    config = BloomConfig()  # the default settings
    bloom.add(r, 2, "warm-up", ["/a"], config, native)  # (the scripts' own memory is not a filter's)
    r.execute_command("FLUSHALL", "SYNC")
    bloom.add(r, 2, "warm-up", ["/a"], config, native)
    before = keys_memory(r)
    pipe = r.pipeline(transaction=False)
    queued = [bloom.queue_add(pipe, r, 1, f"{n:024x}", ["/a", "/b"], config) for n in range(2000)]
    bloom.check_queued(r, pipe.execute(raise_on_error=False), queued)
    used = keys_memory(r) - before
    charged = bloom.site_stats(r, 1, config).memory_bytes
    assert 0.8 < used / charged < 1.2, (used / 2000, charged / 2000)


def test_the_books_are_set_right_by_a_touch_a_recount_and_the_key_browser(backend):
    r, native = backend
    for user in ("a", "b", "c", "d"):
        bloom.add(r, 1, user, ["/x", "/y"], SMALL, native)
    charged = bloom.site_stats(r, 1, SMALL).memory_bytes
    r.unlink(*keys.bloom_registry(1))  # filters made before the books were kept
    assert bloom.site_stats(r, 1, SMALL).filters == 0
    bloom.seen(r, 1, "a", ["/x"], SMALL, native)  # touched: back on the books
    assert bloom.site_stats(r, 1, SMALL).filters == 1
    assert bloom.recount(r, 1, SMALL) == 4 and bloom.site_stats(r, 1, SMALL).memory_bytes == charged
    keybrowser.unlink(r, 1, keys.bloom(1, "b").encode())  # the admin unlinks a filter: off the books
    assert bloom.site_stats(r, 1, SMALL).filters == 3
    r.delete(keys.bloom(1, "c"))  # removed by hand: charged until a recount (or until it would have expired)
    assert bloom.site_stats(r, 1, SMALL).filters == 3
    assert bloom.recount(r, 1, SMALL) == 2 and bloom.seen(r, 1, "c", ["/x"], SMALL, native) == [False]
    keybrowser.unlink(r, 1, keys.bloom_registry(1)[2])  # one of the books: all three go (one record)
    assert r.exists(*keys.bloom_registry(1)) == 0
    assert bloom.recount(r, 1, SMALL) == 2 and bloom.site_stats(r, 1, SMALL).memory_bytes == charged // 2


def test_over_http_the_budget_answers_409_counts_every_event_and_shows(client, admin_client, make_site, r):
    """A key holder names 700 new users in one batch on a site with a 1 MB budget."""
    site, key = make_site()
    site.bloom_max_memory_mb = 1
    site.save()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    events = [{"url": f"https://example.com/p{n % 5}", "user_id": f"u{n}"} for n in range(700)]
    response = client.post("/api/v1/events", data=json.dumps(events), content_type="application/json", **auth)
    assert response.json()["accepted"] == 700
    today = SiteInfo.from_model(site).today().isoformat()
    totals = client.get("/api/v1/stats/timeseries", {"site": "example.com", "from": today, "to": today}, **auth).json()[
        "results"
    ][0]
    assert (totals["pageviews"], totals["visitors"]) == (700, 700)

    config = BloomConfig.for_site(site)
    stats = bloom.site_stats(r, site.pk, config)
    assert 2**20 - 2 * stats.memory_bytes / stats.filters < stats.memory_bytes <= 2**20 and 450 < stats.filters < 600
    seen = lambda user, items: client.post(
        "/api/v1/seen", data=json.dumps({"user": user, "items": items}), content_type="application/json", **auth
    )  # noqa: E731
    refused = seen("someone-new", ["/p1"])
    assert refused.status_code == 409 and "memory budget (1 MB)" in refused.json()["error"]
    assert seen("u0", ["/p1"]).json() == {"added": [True]}  # u0 has a filter (/p0); it takes more
    unseen = client.post(
        "/api/v1/unseen",
        data=json.dumps({"user": "u699", "items": ["/p0", "/p4"]}),
        content_type="application/json",
        **auth,
    )
    assert unseen.json() == {"items": ["/p0", "/p4"]}  # no filter: nothing seen
    recommend = lambda user: client.get(
        "/api/v1/recommendations", {"site": "example.com", "user": user}, **auth
    ).json()["pages"]  # noqa: E731
    assert recommend("u699") == recommend("nobody")

    shown = admin_client.get("/dashboard/example.com/filters").json()
    assert shown["budget_bytes"] == 2**20 and shown["full_since"] and shown["refused"] == 700 - stats.filters + 1
    page = admin_client.get(f"/admin/analytics/site/{site.pk}/change/").content.decode()
    assert f"{stats.filters:,} filters" in page and "of the 1.0 MB budget" in page and "At the budget since" in page


def test_the_budget_is_a_validated_setting_and_recount_bloom_reports_it(make_site, r):
    from django.core.exceptions import ValidationError
    from django.core.management import call_command

    from analytics.models import Site

    site, _ = make_site()
    assert (
        site.bloom_max_memory_mb == bloom.DEFAULT_BUDGET_MB and BloomConfig.for_site(site).budget_bytes == 256 * 2**20
    )
    for wrong in (0, 2 * 1024 * 1024):
        with pytest.raises(ValidationError) as raised:
            Site(domain="w.example", bloom_max_memory_mb=wrong).full_clean()
        assert "bloom_max_memory_mb" in raised.value.message_dict
    info = SiteInfo.from_model(site)
    record(r, info, pageviews(["ann", "bob"]))
    r.unlink(*keys.bloom_registry(site.pk))  # (as before an upgrade)
    out = io.StringIO()
    call_command("recount_bloom", "example.com", stdout=out)
    assert out.getvalue().startswith("example.com: 2 filters, 0.0 MB of 256 MB")
    with pytest.raises(CommandError, match="no site nowhere.example"):
        call_command("recount_bloom", "nowhere.example")


def test_the_first_nightly_rollup_puts_filters_made_before_the_books_on_them_once(site, r):
    """An upgrade needs no manual step: filters from before the budget are counted by the
    next night's rollup, once (a marker keeps it from scanning again)."""
    from analytics.rollups.jobs import roll_closed

    for user in ("a", "b", "c"):
        bloom.add(r, site.pk, user, ["/x"], SMALL, False)
    r.unlink(*keys.bloom_registry(site.pk), keys.bloom_recounted(site.pk))  # (as an earlier version left them)
    assert bloom.site_stats(r, site.pk).filters == 0
    roll_closed(r, site)
    assert bloom.site_stats(r, site.pk).filters == 3 and r.exists(keys.bloom_recounted(site.pk))
    r.unlink(*keys.bloom_registry(site.pk))
    roll_closed(r, site)  # (done once: not again)
    assert bloom.site_stats(r, site.pk).filters == 0
