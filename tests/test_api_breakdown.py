"""GET /api/v1/stats/breakdown: where visitors come from and on what, against brute force
over events sent through the ingest API (issue 12)."""

import random
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

import orjson

from analytics import queries
from analytics.queries import filtered, segments
from analytics.sites import SiteInfo
from analytics.store import keys
from tests.hll import hll_tolerance

AGENTS = {
    "Chrome": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36",
    "Firefox": "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0",
    "Mobile Safari": "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Edge": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 Edg/130.0.0.0",
}
REFERRERS = {
    "Google": "https://www.google.com/",
    "Hacker News": "https://news.ycombinator.com/item?id=1",
    "Direct / None": None,
    "jvns.ca": "https://jvns.ca/blog/",
}
COUNTRIES = {"US": "73.0.0.1", "AU": "1.1.1.1"}  # (a home's and a resolver's: no data centre's)


def post(client, key, events):
    response = client.post(
        "/api/v1/events", orjson.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 200, response.content
    assert response.json()["accepted"] == len(events)


def answer(client, key, prop, start, end, **extra) -> dict:
    """The whole answer of a breakdown, 100 rows a page unless told."""
    response = client.get(
        "/api/v1/stats/breakdown",
        {"site": "example.com", "property": prop, "from": start, "to": end, "limit": 100, **extra},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code == 200, response.content
    return response.json()


def breakdown(client, key, prop, start, end, **extra):
    name = prop.removeprefix("event:props:")  # (property rows are keyed by the property's own name, as Plausible's)
    return {row[name]: row for row in answer(client, key, prop, start, end, **extra)["results"]}


def test_each_dimension_matches_brute_force(client, make_site, r):
    site, key = make_site()
    rng = random.Random(3)
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    events, truth = [], defaultdict(lambda: defaultdict(lambda: [set(), 0]))  # dim -> value -> [visitors, pageviews]
    for v in range(300):  # one visit each: a few pageviews a minute apart
        browser, source, country = rng.choice(list(AGENTS)), rng.choice(list(REFERRERS)), rng.choice(list(COUNTRIES))
        start = day + timedelta(seconds=rng.randrange(80_000))
        for n in range(rng.randint(1, 4)):
            events.append(
                {
                    "url": f"https://example.com/p{n}",
                    "ts": (start + timedelta(minutes=n)).isoformat(),
                    "visitor": f"v{v}",
                    "user_agent": AGENTS[browser],
                    "ip": COUNTRIES[country],
                    "referrer": REFERRERS[source] if n == 0 else "https://example.com/",
                }
            )
            for dim, value in (("browser", browser), ("source", source), ("country", country)):
                truth[dim][value][0].add(v)
                truth[dim][value][1] += 1
    events.sort(key=lambda e: e["ts"])
    for i in range(0, len(events), 250):
        post(client, key, events[i : i + 250])
    d = day.date().isoformat()
    for dim, values in truth.items():
        rows = breakdown(client, key, dim, d, d)
        assert set(rows) == set(values), dim
        for value, (people, views) in values.items():
            assert rows[value]["pageviews"] == views, (dim, value)
            assert rows[value]["visits"] == len(people), (dim, value)  # one visit each
            assert rows[value]["visitors"] == len(people), (dim, value)  # (a day's first values have bitmaps: exact)


def test_a_browser_event_with_a_referrer_and_utm_shows_up(client, make_site, r):
    """The issue's first complaint: a Hacker News referrer and ?utm_source=newsletter were
    accepted and then appeared nowhere."""
    site, key = make_site()
    body = {
        "n": "pageview",
        "u": "https://example.com/launch?utm_source=newsletter&utm_medium=email",
        "d": "example.com",
        "r": "https://news.ycombinator.com/item?id=42",
        "w": 390,
    }
    response = client.post(
        "/api/event", orjson.dumps(body), content_type="text/plain", HTTP_USER_AGENT=AGENTS["Mobile Safari"]
    )
    assert response.status_code == 202
    today = datetime.now(UTC).date().isoformat()
    assert set(breakdown(client, key, "referrer", today, today)) == {"news.ycombinator.com"}
    assert set(breakdown(client, key, "utm_source", today, today)) == {"newsletter"}
    assert set(breakdown(client, key, "channel", today, today)) == {"Email"}
    assert set(breakdown(client, key, "device", today, today)) == {"Mobile"}
    assert set(breakdown(client, key, "screen", today, today)) == {"Mobile"}
    assert set(breakdown(client, key, "entry_page", today, today)) == {"/launch"}
    totals = client.get(
        "/api/v1/stats/aggregate",
        {
            "site": "example.com",
            "from": today,
            "to": today,
            "metrics": "visits,bounce_rate,visit_duration,views_per_visit",
        },
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()["results"]
    assert totals == {
        "visits": {"value": 1},
        "bounce_rate": {"value": 100},
        "visit_duration": {"value": 0},
        "views_per_visit": {"value": 1.0},
    }


def test_visitors_of_a_value_over_a_range_are_a_union_not_a_sum(client, make_site, r):
    site, key = make_site()
    start = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0) - timedelta(days=3)
    events = [
        {
            "url": "https://example.com/",
            "ts": (start + timedelta(days=n)).isoformat(),
            "visitor": f"v{v}",
            "referrer": "https://www.google.com/",
        }
        for n in range(3)
        for v in range(20)
    ]
    post(client, key, events)
    rows = breakdown(client, key, "source", start.date().isoformat(), (start + timedelta(days=2)).date().isoformat())
    # A union of the days' bitmaps (exact: Google has one each day), not their sum (60).
    assert rows["Google"]["visitors"] == 20 and rows["Google"]["visits"] == 60 and rows["Google"]["pageviews"] == 60


def test_a_value_without_a_bitmap_on_some_day_is_a_union_of_its_hlls(client, make_site, r):
    """segment_values=1: one source a day gets a bitmap, the one that comes first. Google
    (the same 20 visitors each day) comes first on two days of three; on the third, Bing
    (10 others) takes the day's bitmap. Over the three days, Google's union is then its
    HLLs' (an estimate), and Bing's too (no bitmap on the other days)."""
    from analytics.models import Site

    site, key = make_site()
    Site.objects.filter(pk=site.pk).update(segment_values=1)
    start = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0) - timedelta(days=3)
    for n in range(3):
        came_first = "bing" if n == 2 else "google"
        visit = lambda v, engine, n=n: {
            "url": "https://example.com/",
            "ts": (start + timedelta(days=n, seconds=v)).isoformat(),
            "visitor": f"{engine}{v}",
            "referrer": f"https://www.{engine}.com/",
        }
        for engine in sorted(
            ("google", "bing"), key=lambda e: e != came_first
        ):  # (one call each: the first takes the bitmap)
            post(client, key, [visit(v, engine) for v in (range(20) if engine == "google" else range(20, 30))])
    days = [(start + timedelta(days=n)).date() for n in range(3)]
    assert [
        r.smembers(keys.dimension_bitmapped(site.pk, day)) & {b"source\x1fGoogle", b"source\x1fBing"} for day in days
    ] == [{b"source\x1fGoogle"}, {b"source\x1fGoogle"}, {b"source\x1fBing"}]
    rows = breakdown(client, key, "source", days[0].isoformat(), days[-1].isoformat())
    assert abs(rows["Google"]["visitors"] - 20) <= hll_tolerance(20) and abs(
        rows["Bing"]["visitors"] - 10
    ) <= hll_tolerance(10)
    two_days = breakdown(client, key, "source", days[0].isoformat(), days[1].isoformat())
    assert two_days["Google"]["visitors"] == 20  # (both days with Google's bitmap: exact)


def test_a_bitmap_made_after_a_days_first_visitors_is_not_taken_for_exact(client, make_site, r):
    """A goal made at noon pins its event: from then on it has a bitmap, which misses the
    morning's converters. Its converters that day come from the HLL, not the bitmap."""
    from django.core.management import call_command

    from analytics.models import Site
    from analytics.pins import sync

    site, key = make_site()
    Site.objects.filter(pk=site.pk).update(segment_values=0)  # (no day's first values: only pins get bitmaps)
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    signup = lambda v, hour: {
        "url": "https://example.com/",
        "ts": (day + timedelta(hours=hour, seconds=v)).isoformat(),
        "visitor": f"v{v}",
        "name": "Signup",
    }
    post(client, key, [signup(v, 9) for v in range(40)])
    call_command("addgoal", "example.com", "--event", "Signup")
    sync(r, site.pk)
    post(client, key, [signup(v, 13) for v in range(40, 50)])
    assert r.bitcount(keys.dimension_bitmap(site.pk, day.date(), "event\x1fSignup")) == 10  # (the afternoon's only)
    rows = breakdown(client, key, "goal", day.date().isoformat(), day.date().isoformat())
    assert abs(rows["Signup"]["visitors"] - 50) <= hll_tolerance(50) and rows["Signup"]["events"] == 50
    # A filter on the goal says so too: that day is estimated (from the HLLs), not 10.
    info = SiteInfo.from_model(Site.objects.get(pk=site.pk))
    summary, estimated = filtered.summary(r, info, segments.parse("goal==Signup"), day.date(), day.date())
    assert estimated and abs(summary["visitors"] - 50) <= hll_tolerance(50)


def test_bad_parameters_are_400s_naming_them(client, make_site, r):
    site, key = make_site()
    for params, word in (
        ({}, "property"),
        ({"property": "shoe_size"}, "property"),
        ({"property": "visit:shoe_size"}, "property"),
        ({"property": "event:props:"}, "property"),
        ({"property": "source", "limit": "0"}, "limit"),
    ):
        response = client.get(
            "/api/v1/stats/breakdown", {"site": "example.com", **params}, HTTP_AUTHORIZATION=f"Bearer {key}"
        )
        assert response.status_code == 400 and word in response.json()["error"]
    error = client.get(
        "/api/v1/stats/breakdown",
        {"site": "example.com", "property": "visit:shoe_size"},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()["error"]
    assert "source" in error and "event:props:<name>" in error  # (it names the properties there are)


def test_rolled_up_days_read_the_same_from_their_rows(client, make_site, r):
    from analytics import rollups
    from analytics.models import DimensionDaily

    site, key = make_site()
    start = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0) - timedelta(days=6)
    rng = random.Random(5)
    events = []
    for n in range(5):
        for v in range(40):
            source = rng.choice(list(REFERRERS))
            t = start + timedelta(days=n, minutes=rng.randrange(600))
            for k in range(rng.randint(1, 3)):
                events.append(
                    {
                        "url": f"https://example.com/p{k}",
                        "ts": (t + timedelta(minutes=k)).isoformat(),
                        "visitor": f"v{v}",
                        "referrer": REFERRERS[source] if k == 0 else "https://example.com/",
                        "user_agent": AGENTS["Firefox"],
                    }
                )
    events.sort(key=lambda e: e["ts"])
    post(client, key, events)
    first, last = start.date().isoformat(), (start + timedelta(days=4)).date().isoformat()
    before = {
        prop: breakdown(client, key, prop, first, last) for prop in ("source", "entry_page", "exit_page", "browser")
    }
    totals = client.get(
        "/api/v1/stats/aggregate",
        {"site": "example.com", "from": first, "to": last, "metrics": "visits,bounce_rate,visit_duration"},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()["results"]
    rollups.rollup(r, site, start.date(), (start + timedelta(days=4)).date())
    assert DimensionDaily.objects.filter(site=site, dimension="source").exists()
    for prop, rows in before.items():
        assert breakdown(client, key, prop, first, last) == rows, prop
    assert (
        client.get(
            "/api/v1/stats/aggregate",
            {"site": "example.com", "from": first, "to": last, "metrics": "visits,bounce_rate,visit_duration"},
            HTTP_AUTHORIZATION=f"Bearer {key}",
        ).json()["results"]
        == totals
    )


def test_goals_convert_like_brute_force(client, make_site, r):
    from django.core.management import call_command

    site, key = make_site()
    call_command("addgoal", "example.com", "--event", "Signup")
    call_command("addgoal", "example.com", "--page", "/blog/*", "--name", "Read the blog")
    call_command("addgoal", "example.com", "--page", "/pricing", "--name", "Pricing")
    rng = random.Random(8)
    day = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0) - timedelta(days=1)
    events, signups, readers, signup_events, blog_views, everyone = [], set(), set(), 0, 0, set()
    plans, pricing = defaultdict(lambda: [set(), 0]), set()
    for v in range(200):
        t = day + timedelta(minutes=rng.randrange(1200))
        everyone.add(v)
        path = rng.choice(["/", "/blog/a", "/blog/b", "/blog/b/c", "/pricing"])
        events.append({"url": f"https://example.com{path}", "ts": t.isoformat(), "visitor": f"v{v}"})
        if path in ("/blog/a", "/blog/b"):
            readers.add(v)
            blog_views += 1
        if path == "/pricing":
            pricing.add(v)
        if rng.random() < 0.3:
            plan = rng.choice(["free", "pro"])
            events.append(
                {
                    "url": "https://example.com/signup",
                    "ts": (t + timedelta(minutes=1)).isoformat(),
                    "visitor": f"v{v}",
                    "name": "Signup",
                    "props": {"plan": plan},
                    "revenue": {"currency": "EUR", "amount": "9.99"},
                }
            )
            signups.add(v)
            signup_events += 1
            plans[plan][0].add(v)
            plans[plan][1] += 1
    events.sort(key=lambda e: e["ts"])
    post(client, key, events)
    d = day.date().isoformat()
    rows = breakdown(client, key, "goal", d, d)
    assert rows["Signup"]["events"] == signup_events and rows["Signup"]["visitors"] == len(
        signups
    )  # (a goal's event has its bitmap: exact)
    assert rows["Signup"]["conversion_rate"] == round(100 * rows["Signup"]["visitors"] / len(everyone), 2)
    assert rows["Signup"]["revenue"] == {"EUR": round(9.99 * signup_events, 2)}
    assert rows["Read the blog"]["events"] == blog_views and abs(
        rows["Read the blog"]["visitors"] - len(readers)
    ) <= hll_tolerance(len(readers))
    assert rows["Pricing"]["visitors"] == len(
        pricing
    )  # (a literal page goal is pinned: its bitmap is exact, as a filter on it is)
    props = breakdown(client, key, "event:props:plan", d, d, event="Signup")
    assert {value: row["events"] for value, row in props.items()} == {p: n for p, (s, n) in plans.items()}
    assert all(abs(props[p]["visitors"] - len(s)) <= hll_tolerance(len(s)) for p, (s, n) in plans.items())


def test_bad_props_and_revenue_are_400s(client, make_site, r):
    site, key = make_site()
    for extra, word in (
        (({"p": [1, 2]}), "props"),
        ({"p": {"a": {"b": 1}}}, "props.a"),
        ({"$": {"currency": "euro", "amount": 1}}, "currency"),
        ({"$": {"currency": "EUR", "amount": "lots"}}, "amount"),
        ({"$": {"currency": "EUR", "amount": "Infinity"}}, "amount"),
        ({"$": {"currency": "EUR", "amount": "1e4000000"}}, "amount"),
        ({"n": "Sign\x1fup"}, "name"),
    ):
        body = {"n": "Signup", "u": "https://example.com/", "d": "example.com", **extra}
        response = client.post(
            "/api/event", orjson.dumps(body), content_type="text/plain", HTTP_USER_AGENT=AGENTS["Firefox"]
        )
        assert response.status_code == 400 and word in response.json()["error"], (extra, response.content)


def test_metrics_picks_the_row_metrics_and_names_what_is_not_there(client, make_site, r):
    site, key = make_site()
    today = datetime.now(UTC).date().isoformat()
    post(client, key, [{"url": "https://example.com/", "visitor": "v1", "referrer": "https://www.google.com/"}])
    rows = breakdown(client, key, "source", today, today, metrics="visitors,bounce_rate")
    assert rows == {"Google": {"source": "Google", "visitors": 1, "bounce_rate": 100}}
    response = client.get(
        "/api/v1/stats/breakdown",
        {"site": "example.com", "property": "source", "metrics": "visitors,conversion_rate"},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert (
        response.status_code == 400 and "conversion_rate not available for property=source" in response.json()["error"]
    )


def test_events_older_than_the_site_keeps_are_counted_but_a_sealed_days_are_refused_by_name(client, make_site, r):
    """Any day from 2000 on counts (history of any age); a day whose raw keys expired
    after its rollup (sealed) refuses events, each with the reason, and the others count."""
    from analytics.models import DailyMetrics

    site, key = make_site()
    long_ago = datetime.now(UTC) - timedelta(days=site.keep_daily_days + 5)
    body = [
        {"url": "https://example.com/", "visitor": "v1", "ts": long_ago.isoformat()},
        {"url": "https://example.com/", "visitor": "v2"},
    ]
    response = client.post(
        "/api/v1/events", orjson.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 200 and response.json()["accepted"] == 2
    day = long_ago.date()
    DailyMetrics.objects.create(
        site=site, date=day, dau=1, visitors=1, pageviews=1, final=True, keys_until=datetime.now(UTC)
    )
    response = client.post(
        "/api/v1/events", orjson.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    answer = response.json()
    assert response.status_code == 200 and answer["accepted"] == 1
    assert (
        answer["rejected"][0]["index"] == 0
        and f"{day} was rolled up and its raw keys have expired" in answer["rejected"][0]["error"]
    )


def test_goals_and_properties_keep_their_counts_once_the_raw_keys_expire(client, make_site, r):
    """The rollups store each event's and each property value's day as rows: once the raw
    keys are gone (the expiry policy), counts are exact from the rows and visitors no
    less than the largest day's, against brute force over three days."""
    from django.core.management import call_command

    from analytics.rollups import jobs

    site, key = make_site()
    call_command("addgoal", "example.com", "--event", "Signup")
    rng = random.Random(11)
    today = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0)
    days = [today - timedelta(days=n) for n in (4, 3, 2)]
    events, signups, plans, daily = [], 0, defaultdict(int), defaultdict(set)
    for day in days:
        for v in range(60):
            if rng.random() < 0.5:
                plan = rng.choice(["free", "pro", "team"])
                events.append(
                    {
                        "url": "https://example.com/signup",
                        "ts": (day + timedelta(minutes=v)).isoformat(),
                        "visitor": f"v{v}",
                        "name": "Signup",
                        "props": {"plan": plan},
                    }
                )
                signups += 1
                plans[plan] += 1
                daily[day.date()].add(v)
    post(client, key, events)
    jobs.rollup(r, site, days[0].date(), days[-1].date())
    first, last = days[0].date().isoformat(), days[-1].date().isoformat()
    before = breakdown(client, key, "goal", first, last)["Signup"]
    for day in days:  # the raw keys of those days expire
        for name in list(r.scan_iter(match=f"tally:{{{site.pk}}}:*{day.date().isoformat()}*", count=1000)):
            r.delete(name)
    after = breakdown(client, key, "goal", first, last)["Signup"]
    assert after["events"] == before["events"] == signups
    assert max(len(people) for people in daily.values()) - hll_tolerance(60) <= after["visitors"] <= before["visitors"]
    props = breakdown(client, key, "event:props:plan", first, last, event="Signup")
    assert {value: row["events"] for value, row in props.items()} == dict(plans)
    card = queries.event_properties(
        r, SiteInfo.from_model(site), days[0].date(), days[-1].date(), "Signup"
    )  # (the dashboard's Goals card)
    assert {row["plan"]: row["events"] for row in card["plan"]} == dict(plans)


def send_search_fixture(client, key) -> str:
    """Two days ago: pages under /blog/ and /Blog/ among others, two goals, a property
    plan with a capitalised value, all from Google; returns the day."""
    from django.core.management import call_command

    call_command("addgoal", "example.com", "--event", "Signup")
    call_command("addgoal", "example.com", "--page", "/blog/*", "--name", "Read the blog")
    day = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0) - timedelta(days=2)
    paths = ["/", "/blog/a", "/Blog/b", "/pricing", "/about"]
    events = []
    for v in range(30):
        t = day + timedelta(minutes=v)
        events.append(
            {
                "url": f"https://example.com{paths[v % len(paths)]}",
                "ts": t.isoformat(),
                "visitor": f"v{v}",
                "referrer": "https://www.google.com/",
            }
        )
        if v % 3 == 0:
            events.append(
                {
                    "url": "https://example.com/signup",
                    "ts": (t + timedelta(seconds=30)).isoformat(),
                    "visitor": f"v{v}",
                    "name": "Signup",
                    "props": {"plan": ["free", "pro", "Team"][v % 9 // 3]},
                }
            )
    post(client, key, events)
    return day.date().isoformat()


def test_search_keeps_matching_pages_goals_and_property_values_before_paging(client, make_site, r):
    """The user audit: search=zzz answered every page, goal and property value. search
    keeps the values containing the text, case-insensitively, before paging, so `total`
    counts them; page answers have a total too."""
    from analytics.rollups import jobs

    site, key = make_site()
    d = send_search_fixture(client, key)

    def found(prop, search, **extra):
        body = answer(client, key, prop, d, d, search=search, **extra)
        name = prop.removeprefix("event:props:")
        return [row[name] for row in body["results"]], body["total"]

    def check():
        for prop in ("page", "goal", "event:props:plan", "source"):
            assert found(prop, "zzz") == ([], 0), prop
        assert answer(client, key, "page", d, d)["total"] == 5  # (the five paths: a custom event is no pageview)
        assert sorted(found("page", "BLOG")[0]) == ["/Blog/b", "/blog/a"] and found("page", "BLOG")[1] == 2
        assert found("page", "blog", limit=1, page=2)[1] == 2 and len(found("page", "blog", limit=1, page=2)[0]) == 1
        assert found("page", "blog", limit=1, page=3) == ([], 2)
        assert found("goal", "BLOG") == (["Read the blog"], 1)
        assert found("event:props:plan", "team", event="Signup") == (["Team"], 1)
        assert sorted(found("event:props:plan", "E")[0]) == ["Team", "free"]

    check()
    jobs.rollup(r, site, date.fromisoformat(d), date.fromisoformat(d))  # (the day's rows, read from the database)
    check()


def test_search_works_under_filters_too(client, make_site, r):
    site, key = make_site()
    d = send_search_fixture(client, key)
    for prop, search, rows in (
        ("page", "BLOG", {"/blog/a", "/Blog/b"}),
        ("goal", "sign", {"Signup"}),
        ("source", "zzz", set()),
    ):
        body = answer(client, key, prop, d, d, search=search, filters="source==Google")
        assert {row[prop] for row in body["results"]} == rows and body["total"] == len(rows), prop


def test_plausibles_prefixed_property_names_answer_as_tallys_own(client, make_site, r):
    """Plausible's clients send visit:source, event:page, event:goal: the same breakdown
    as Tally's name, which the answer's `property` and its rows' key keep."""
    site, key = make_site()
    d = send_search_fixture(client, key)
    visit = [
        "source",
        "referrer",
        "channel",
        "utm_source",
        "utm_medium",
        "utm_campaign",
        "utm_term",
        "utm_content",
        "device",
        "browser",
        "browser_version",
        "os",
        "os_version",
        "country",
        "region",
        "city",
        "screen",
        "entry_page",
        "exit_page",
    ]

    def asked(prop):
        response = client.get(
            "/api/v1/stats/breakdown",
            {"site": "example.com", "property": prop, "from": d, "to": d, "limit": 100},
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        return response.status_code, response.json()

    for prefixed, name in [(f"visit:{p}", p) for p in visit] + [("event:page", "page"), ("event:goal", "goal")]:
        assert asked(prefixed) == asked(name), prefixed  # (region and city: the same 409, without a city database)
    assert answer(client, key, "visit:source", d, d)["property"] == "source"
    assert [row["source"] for row in answer(client, key, "visit:source", d, d)["results"]] == ["Google"]
    assert {row["goal"] for row in answer(client, key, "event:goal", d, d)["results"]} == {"Signup", "Read the blog"}
    filtered = answer(client, key, "event:page", d, d, filters="visit:source==Google", search="blog")
    assert filtered["property"] == "page" and {row["page"] for row in filtered["results"]} == {"/blog/a", "/Blog/b"}


def test_a_values_visitors_once_the_raw_keys_expire_are_its_days_from_the_rows(client, make_site, r):
    """Rolled up, then the raw keys gone (the expiry policy): a single day's visitors per
    value are the stored row's, exact against brute force; over several days the union
    cannot be taken any more, and is never shown below the value's largest day (nor above
    what it was)."""
    from analytics import rollups

    site, key = make_site()
    rng = random.Random(17)
    start = datetime.now(UTC).replace(hour=2, minute=0, second=0, microsecond=0) - timedelta(days=5)
    events, daily = [], defaultdict(lambda: defaultdict(set))
    for n in range(3):
        for v in range(50):
            if rng.random() < 0.7:
                source = rng.choice(list(REFERRERS))
                t = start + timedelta(days=n, minutes=v)
                events.append(
                    {
                        "url": "https://example.com/",
                        "ts": t.isoformat(),
                        "visitor": f"v{v}",
                        "referrer": REFERRERS[source],
                        "user_agent": AGENTS["Firefox"],
                    }
                )
                daily[t.date()][source].add(v)
    post(client, key, events)
    days = sorted(daily)
    rollups.rollup(r, site, days[0], days[-1])
    first, last = days[0].isoformat(), days[-1].isoformat()
    before = breakdown(client, key, "source", first, last)
    for day in days:  # (as the expiry policy would)
        for name in list(r.scan_iter(match=f"tally:{{{site.pk}}}:*{day.isoformat()}*", count=1000)):
            r.delete(name)
    for day in days:
        rows = breakdown(client, key, "source", day.isoformat(), day.isoformat())
        assert {s: row["visitors"] for s, row in rows.items()} == {s: len(people) for s, people in daily[day].items()}
    after = breakdown(client, key, "source", first, last)
    assert set(after) == set(before)
    for source, row in after.items():
        assert max(len(daily[day][source]) for day in days) <= row["visitors"] <= before[source]["visitors"]
        assert row["visits"] == before[source]["visits"]


def test_a_value_with_many_days_of_one_visitor_does_not_hide_the_top(site, r):
    """breakdown() counts unions in rounds, in order of visitor-days: six sources each
    sent by one visitor on 20 days (20 visitor-days, 1 visitor) rank before six sent by
    5-10 people on one day. The page must still be the most visitors first, as the
    brute force says, on every page of it."""
    from analytics.ingest import Hit, record
    from analytics.ingest.identity import identity_source
    from analytics.ingest.visit import visit_attrs

    info = SiteInfo.from_model(site)
    end = datetime.now(UTC).date() - timedelta(days=1)
    hits, truth = [], defaultdict(set)
    for k in range(6):
        for d in range(20):
            hits.append((end - timedelta(days=d), f"loyal{k}", f"l{k}"))
        for v in range(5 + k):
            hits.append((end - timedelta(days=k), f"wide{k}", f"w{k}-{v}"))
    events = []
    for day, source, visitor in hits:
        truth[source].add(visitor)
        at = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
        url = f"https://example.com/?utm_source={source}"
        attrs = visit_attrs("example.com", url, None, None, None, None)
        events.append(Hit(at, "/", "pageview", identity_source(None, visitor, None, None), attrs=attrs))
    record(r, info, sorted(events, key=lambda h: h.ts))
    want = sorted(((len(people), s) for s, people in truth.items()), key=lambda x: (-x[0], x[1]))
    for page in (1, 2, 3):
        rows, total = queries.breakdown(r, info, end - timedelta(days=29), end, "utm_source", limit=3, page=page)
        assert total == 12
        assert [row["visitors"] for row in rows] == [n for n, _ in want[(page - 1) * 3 : page * 3]], page
