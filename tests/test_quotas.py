"""Quotas per site and day: past them, new pages and event names count under "(other)",
so one site (or one attacker) cannot fill Redis with names; totals stay exact."""

import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest

from analytics import queries
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.sites import SiteInfo
from analytics.store import keys
from tests.hll import hll_tolerance
from tests.junk import flood, used_memory

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def who(n):
    return identity_source(None, f"v{n}", None, None)


def test_pages_past_the_daily_quota_count_under_other(site, r):
    site.max_pages_per_day = 50
    site.save()
    info = SiteInfo.from_model(site)
    rng = random.Random(4)
    events = [(f"/p/{rng.randrange(200)}", rng.randrange(300)) for _ in range(3000)]
    for i in range(0, len(events), 700):
        record(r, info, [Hit(NOW, path, "pageview", who(v)) for path, v in events[i : i + 700]], now=NOW)

    # brute force: the first 50 distinct paths in arrival order are tracked, the rest are (other)
    tracked = list(dict.fromkeys(path for path, _ in events))[:50]
    views = defaultdict(int)
    for path, _ in events:
        views[path if path in tracked else "(other)"] += 1
    day = NOW.date()
    listed = {p.decode() for p in r.smembers(keys.pages_index(site.pk, day))}
    assert listed == set(tracked) | {"(other)"}
    for path, count in views.items():
        assert int(r.get(keys.page_pageviews(site.pk, day, path))) == count, path
    row = queries.timeseries(r, info, day, day, ("pageviews", "dau"))[0]
    assert row["pageviews"] == 3000 and row["dau"] == len({v for _, v in events})  # totals stay exact
    others = {v for path, v in events if path not in tracked}
    assert abs(r.pfcount(keys.page_visitors(site.pk, day, "(other)")) - len(others)) <= hll_tolerance(len(others))


def test_the_quota_is_per_day_and_event_names_have_theirs(site, r):
    site.max_event_names_per_day = 3
    site.save()
    info = SiteInfo.from_model(site)
    hits = [Hit(NOW, "/", f"Signup{n}", who(n)) for n in range(10)]
    record(r, info, hits, now=NOW)
    assert r.scard(keys.events_index(site.pk, NOW.date())) == 4  # three names and (other)
    assert int(r.get(keys.event_count(site.pk, NOW.date(), "(other)"))) == 7
    record(r, info, [Hit(NOW, "/", "Signup0", who(1))], now=NOW)  # a tracked name still counts
    assert int(r.get(keys.event_count(site.pk, NOW.date(), "Signup0"))) == 2
    next_day = NOW + timedelta(days=1)
    record(r, info, [Hit(next_day, "/", "Signup9", who(1))], now=next_day)
    assert r.smembers(keys.events_index(site.pk, next_day.date())) == {b"Signup9"}


def test_the_page_search_index_keeps_the_most_visited_paths(site, r, settings):
    settings.PAGE_SEARCH_CAP = 5
    info = SiteInfo.from_model(site)
    record(r, info, [Hit(NOW, f"/first/{n}", "pageview", who(n)) for n in range(5)], now=NOW)  # one view each
    popular = [Hit(NOW, f"/popular/{n}", "pageview", who(v)) for n in range(5) for v in range(n + 2)]
    record(r, info, popular, now=NOW)
    assert queries.search_pages(r, info, "/", limit=20) == [
        f"/popular/{n}" for n in reversed(range(5))
    ]  # most visited first
    record(r, info, [Hit(NOW, "/new", "pageview", who(1))], now=NOW)  # one view: least visited, leaves at once
    assert queries.search_pages(r, info, "/", limit=20) == [
        f"/popular/{n}" for n in reversed(range(5))
    ]  # most visited first
    assert r.zcard(keys.page_rank(site.pk)) == 5


def test_the_property_value_quota_is_per_property_and_totals_stay_exact(site, r):
    """An unbounded property (a URL) must not take the room of the others (a plan), and
    what it loses counts in its own "(other)" row: per property, the rows add up to the
    events sent, against brute force."""
    from analytics.queries.goals import properties

    site.max_property_values = 4
    site.save()
    info = SiteInfo.from_model(site)
    rng = random.Random(5)
    sent = defaultdict(lambda: defaultdict(int))  # property -> value -> events
    hits = []
    for n in range(600):
        url, plan = f"/u/{rng.randrange(50)}", rng.choice(["free", "pro", "team"])
        props = (("url", url),) if n < 300 else (("url", url), ("plan", plan))  # plan comes late: url is full by then
        hits.append(Hit(NOW, "/", "Signup", who(n % 97), props=props))
        for name, value in props:
            sent[name][value] += 1
    for i in range(0, len(hits), 37):
        record(r, info, hits[i : i + 37], now=NOW)
    day = NOW.date()
    plan, plan_total = properties(r, info, day, day, "plan", "Signup", limit=100)
    assert {row["plan"]: row["events"] for row in plan} == dict(sent["plan"])  # all three kept
    url, url_total = properties(r, info, day, day, "url", "Signup", limit=100)
    rows = {row["url"]: row["events"] for row in url}
    assert url_total == 5 and "(other)" in rows  # four values, then (other)
    assert sum(rows.values()) == sum(sent["url"].values())  # nothing lost
    assert all(rows[value] == sent["url"][value] for value in rows if value != "(other)")


def test_property_names_have_a_daily_cap_per_event_and_nothing_is_lost(site, r):
    """Random property names (an attacker's 10 per event) stop adding keys once an event
    has `max_property_names` of them that day: the others' events count under the event's
    "(other)" property, and every property's rows add up to the events sent."""
    from analytics.queries.goals import properties

    site.max_property_names = 5
    site.save()
    info = SiteInfo.from_model(site)
    rng = random.Random(9)
    hits, sent = [], defaultdict(int)
    for n in range(400):
        props = tuple((f"p{rng.randrange(10**6)}", "x") for _ in range(10)) if n % 2 else (("plan", "pro"),)
        hits.append(Hit(NOW, "/", "Signup", who(n % 50), props=props))
        for name, _ in props:
            sent[name] += 1
    for i in range(0, len(hits), 37):
        record(r, info, hits[i : i + 37], now=NOW)
    day = NOW.date()
    groups = {m.decode() for m in r.smembers(keys.props_index(info.id, day))}
    names = {g.split("\x1f")[1] for g in groups}
    assert len(names - {"(other)"}) == 5 and "(other)" in names  # five names kept, then the event's (other)
    kept = {name: properties(r, info, day, day, name, "Signup", limit=10)[0] for name in names}
    counted = sum(sum(row["events"] for row in rows) for rows in kept.values())
    assert counted == sum(sent.values())  # nothing lost: every event's properties count somewhere
    assert int(r.hget(keys.props_sizes(info.id, day), "Signup")) == 5


def test_the_days_properties_and_values_together_are_capped(site, r):
    """Random values under random names across events: the site-day's groups stop at
    `max_property_groups`, whatever is sent; the rest count under "(other)"."""
    site.max_property_groups, site.max_property_values = 50, 1000
    site.save()
    info = SiteInfo.from_model(site)
    rng = random.Random(3)
    hits = [
        Hit(NOW, "/", f"E{n % 7}", who(n % 40), props=((f"k{n % 13}", f"v{rng.randrange(10**6)}"),)) for n in range(600)
    ]
    for i in range(0, len(hits), 50):
        record(r, info, hits[i : i + 50], now=NOW)
    day = NOW.date()
    groups = r.smembers(keys.props_index(info.id, day))
    real = [g for g in groups if not g.endswith(b"\x1f(other)")]
    assert int(r.hget(keys.props_sizes(info.id, day), "")) == 50
    assert len(real) <= 50 and len(groups) <= 50 + 7 * 14  # (each property's and event's "(other)" beside them)


def test_properties_of_events_past_the_names_quota_count_under_the_other_events(site, r):
    """Random event names, each with its properties: past `max_event_names_per_day` the
    events count under "(other)", and so do their properties (under the "(other)" event's
    "(other)" property), so a flood of made-up event names adds no property keys (each of
    49,000 names kept its own "(other)" property before); nothing is lost."""
    from analytics.queries.goals import properties

    site.max_event_names_per_day = 5
    site.save()
    info = SiteInfo.from_model(site)
    hits = [Hit(NOW, "/", f"E{n}", who(n % 40), props=(("plan", f"v{n % 3}"), (f"k{n}", "x"))) for n in range(300)]
    for i in range(0, len(hits), 37):
        record(r, info, hits[i : i + 37], now=NOW)
    day = NOW.date()
    events = {m.decode() for m in r.smembers(keys.events_index(info.id, day))}
    assert len(events - {"(other)"}) == 5
    groups = {m.decode() for m in r.smembers(keys.props_index(info.id, day))}
    assert {g.split("\x1f")[0] for g in groups} == events  # (no group of an event past the quota)
    prop_keys = sum(1 for _ in r.scan_iter(match=keys.prop_count(info.id, day, "*")))
    assert prop_keys <= 5 * 2 * 2 + 5 + 1, (
        prop_keys
    )  # (the kept events' properties with a value each, their "(other)"s, the other event's)

    def counted() -> int:
        return sum(
            sum(row["events"] for row in properties(r, info, day, day, name, event, limit=100)[0])
            for event in events
            for name in {g.split("\x1f")[1] for g in groups if g.startswith(event + "\x1f")}
        )

    assert counted() == 2 * 300  # (every event's two properties count somewhere)
    from analytics.rollups import jobs

    jobs.rollup(r, site, day, day)  # (then the raw keys gone, as the expiry policy does: the rows say the same)
    r.delete(*r.scan_iter(match=keys.site_pattern(site.id, f"*{day.isoformat()}*"), count=1000))
    assert counted() == 2 * 300


def test_a_goal_lists_its_ten_most_sent_properties_not_every_name(site, r):
    """A goal's event sent with many property names: the dashboard's goal row lists the ten
    sent most often (a junk-filled goal made a 10.7 MB page); the rest stay a breakdown's."""
    from analytics.queries.goals import event_properties

    info = SiteInfo.from_model(site)
    hits = [Hit(NOW, "/", "Signup", who(n), props=(("plan", "pro"), (f"junk{n}", "x"))) for n in range(30)]
    record(r, info, hits, now=NOW)
    shown = event_properties(r, info, NOW.date(), NOW.date(), "Signup")
    assert len(shown) == 10 and "plan" in shown and shown["plan"][0]["events"] == 30


def _rolled_up(r, site, day) -> dict[str, int]:
    from analytics.models import DimensionDaily, EventDaily, PageDaily
    from analytics.rollups.jobs import rollup

    rollup(r, site, day, day)
    return {
        model.__name__: model.objects.filter(site=site, date=day).count()
        for model in (PageDaily, EventDaily, DimensionDaily)
    }


@pytest.mark.single_server  # (INFO memory of one server)
def test_a_junk_flood_costs_at_most_400_bytes_an_event_and_past_the_caps_only_its_visitors(site, r):
    """What one anonymous event can cost, from INFO memory on a real server: at most 400 B
    while its visit is open; once the caps are full, a second flood adds only what each new
    visitor keeps (an id, its bits: test_idmap.py's 32 B), not its junk, and no stored
    rollup row."""
    site.max_pages_per_day, site.max_event_names_per_day, site.max_property_values = 100, 10, 100
    site.max_property_names, site.max_property_groups = 5, 200
    site.pattern_pageviews = 0  # (the rate screen's windows live 20 minutes, as open visits do: not what a day keeps)
    site.save()
    info = SiteInfo.from_model(site)
    rng, now = random.Random(11), datetime.now(UTC)
    n = 6000

    def without_open_visits() -> int:
        r.delete(*r.scan_iter(match=keys.site_prefix(site.pk) + "*sess*"))  # (as their expiry will)
        return used_memory(r)

    flood(r, info, random.Random(0), 100, now - timedelta(days=1))  # (the scripts loaded: not the events' cost)
    before = used_memory(r)
    flood(r, info, rng, n, now)
    assert (used_memory(r) - before) / n <= 400
    rows = _rolled_up(r, site, info.today())
    first = without_open_visits()
    flood(r, info, rng, n, now)
    assert (used_memory(r) - first) / n <= 400
    assert _rolled_up(r, site, info.today()) == rows  # (the stored rows are the caps' too)
    second = without_open_visits()
    assert (second - first) / n <= 48, (second - first) / n
