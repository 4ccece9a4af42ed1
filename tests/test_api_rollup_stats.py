"""The read API over rolled-up data: exact WAU/MAU and retention, weeks and months."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command

from analytics.sites import SiteInfo
from analytics.store import keys
from tests.hll import hll_tolerance
from tests.test_rollups import brute_force, ingest_history


@pytest.fixture
def history(make_site, r):
    site, key = make_site()
    active = ingest_history(r, site, days=50)
    return site, key, active


def get(client, key, path, **params):
    response = client.get(
        f"/api/v1/stats/{path}", {"site": "example.com", **params}, HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    return response


@pytest.mark.parametrize("rolled", [True, False], ids=["from stored rows", "live from Redis"])
def test_retention_and_windows_match_brute_force(client, history, rolled):
    site, key, active = history
    today = SiteInfo.from_model(site).today()
    if rolled:
        call_command(
            "rollup", "--from", (today - timedelta(days=49)).isoformat(), stdout=io.StringIO(), stderr=io.StringIO()
        )
    new, union, week_active, week_new = brute_force(active)
    start = (today - timedelta(days=49)).isoformat()

    body = get(client, key, "retention", **{"from": start, "to": today.isoformat()}).json()
    assert body["unit"] == "day" and body["periods"] == 30
    assert len(body["cohorts"]) == 50
    for cohort in body["cohorts"]:
        c = today.fromisoformat(cohort["cohort"])
        reach = min(30, (today - c).days)
        assert cohort["size"] == len(new[c])
        assert cohort["retained"] == [len(new[c] & active.get(c + timedelta(days=n), set())) for n in range(reach + 1)]

    body = get(client, key, "retention", unit="week", periods=4, **{"from": start, "to": today.isoformat()}).json()
    this_week = today - timedelta(days=today.weekday())
    for cohort in body["cohorts"]:
        w = today.fromisoformat(cohort["cohort"])
        reach = min(4, (this_week - w).days // 7)
        assert cohort["size"] == len(week_new[w])
        assert cohort["retained"] == [len(week_new[w] & week_active[w + timedelta(weeks=n)]) for n in range(reach + 1)]

    rows = get(
        client, key, "timeseries", metrics="dau,wau,mau,stickiness", **{"from": start, "to": today.isoformat()}
    ).json()["results"]
    for row in rows:
        day = today.fromisoformat(row["date"])
        assert (row["dau"], row["wau"], row["mau"]) == (len(active[day]), len(union(day, 7)), len(union(day, 30)))
        assert row["stickiness"] == round(row["dau"] / row["mau"], 4)


@pytest.mark.parametrize("interval", ["week", "month"])
def test_weeks_and_months_are_true_unions(client, history, interval):
    site, key, active = history
    today = SiteInfo.from_model(site).today()
    call_command(
        "rollup", "--from", (today - timedelta(days=49)).isoformat(), stdout=io.StringIO(), stderr=io.StringIO()
    )
    start = today - timedelta(days=49)
    body = get(
        client, key, "timeseries", interval=interval, **{"from": start.isoformat(), "to": today.isoformat()}
    ).json()
    assert body["interval"] == interval
    for row in body["results"]:
        first = today.fromisoformat(row["date"])
        if interval == "week":
            assert first.weekday() == 0
            span = {d for d in active if first <= d < first + timedelta(days=7)}
        else:
            assert first.day == 1
            span = {d for d in active if d.replace(day=1) == first}
        span = {d for d in span if d >= start}
        truth = set().union(*(active[d] for d in span))
        assert abs(row["visitors"] - len(truth)) <= hll_tolerance(len(truth))
        assert row["visitors"] < sum(len(active[d]) for d in span) or len(span) <= 1  # a union, not a sum
        assert set(row) == {"date", "visitors", "pageviews", "new_visitors"}


@pytest.mark.parametrize(
    "path, params, message",
    [
        ("timeseries", {"interval": "year"}, "interval: must be one of hour, day, week, month"),
        ("timeseries", {"interval": "week", "metrics": "dau"}, "unknown dau for interval=week"),
        ("retention", {"unit": "month"}, "unit: must be one of day, week"),
        ("retention", {"periods": "99"}, "periods: must be between 0 and 30"),
        ("retention", {"unit": "week", "periods": "13"}, "periods: must be between 0 and 12"),
        ("retention", {"periods": "x"}, "periods: not an integer"),
    ],
)
def test_bad_parameters_are_a_400(client, make_site, path, params, message):
    _, key = make_site()
    response = get(client, key, path, **params)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_retention_needs_a_stable_identity(client, make_site):
    _, key = make_site(identity_mode="daily")
    response = get(client, key, "retention")
    assert response.status_code == 400
    assert "rotates its salt daily" in response.json()["error"]


@pytest.mark.parametrize("rolled", [True, False], ids=["from stored rows", "live from Redis"])
def test_top_pages_over_weeks_match_brute_force(client, make_site, r, rolled):
    import random
    from collections import defaultdict

    from analytics.ingest import Hit, record
    from analytics.ingest.identity import identity_source
    from tests.test_rollups import at

    site, key = make_site()
    info = SiteInfo.from_model(site)
    today = info.today()
    rng = random.Random(9)
    views, people, seen_on, hits = defaultdict(int), defaultdict(set), defaultdict(set), []
    for offset in range(45, -1, -1):
        day = today - timedelta(days=offset)
        for _ in range(120):
            page = f"/p{rng.choices(range(30), weights=[1 / (k + 1) ** 1.5 for k in range(30)])[0]}"  # (Zipf: a few pages lead every day, and get the bitmaps)
            v = rng.randrange(300)
            hits.append(Hit(at(day), page, "pageview", identity_source(None, f"v{v}", None, None)))
            views[page] += 1
            people[page].add(v)
            seen_on[page].add(day)
    record(r, info, hits)
    if rolled:
        call_command(
            "rollup", "--from", (today - timedelta(days=45)).isoformat(), stdout=io.StringIO(), stderr=io.StringIO()
        )
    body = get(
        client, key, "pages", limit=30, **{"from": (today - timedelta(days=45)).isoformat(), "to": today.isoformat()}
    ).json()
    assert {p["page"] for p in body["results"]} == set(views)
    bitmapped = {day: r.smembers(keys.dimension_bitmapped(site.pk, day)) for day in set().union(*seen_on.values())}
    exact = 0
    for p in body["results"]:
        assert p["pageviews"] == views[p["page"]]
        truth = len(people[p["page"]])
        assert abs(p["visitors"] - truth) <= hll_tolerance(truth), p
        if all(f"page\x1f{p['page']}".encode() in bitmapped[day] for day in seen_on[p["page"]]):
            assert p["visitors"] == truth, p  # a bitmap each day it had visitors: exact
            exact += 1
    assert exact >= 3  # (the pages most visited each day)
    top3 = get(
        client, key, "pages", limit=3, **{"from": (today - timedelta(days=45)).isoformat(), "to": today.isoformat()}
    ).json()["results"]
    assert top3 == body["results"][:3]
