"""`filters=` on the read API: the same numbers as brute force over the same events, the
answer says its filters and whether any number is an estimate, and a bad filter is a 400
naming the problem."""

import random
from datetime import UTC, date, datetime, timedelta

import pytest

from analytics.periods import days_between
from analytics.queries import segments
from tests.test_segments import DAYS, Brute, make_events, send


@pytest.fixture
def world(make_site, r):
    site, key = make_site()
    first_day = datetime.now(UTC).date() - timedelta(days=DAYS + 2)
    events = make_events(random.Random(3), first_day)
    send(r, site, events)
    return key, Brute(events), days_between(first_day, first_day + timedelta(days=DAYS - 1))


def get(client, key, path, **params):
    response = client.get(
        f"/api/v1/stats/{path}", {"site": "example.com", **params}, HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    return response


def test_timeseries_and_aggregate_under_filters_match_brute_force(world, client):
    key, brute, days = world
    text = "source==Google|newsletter;country!=FR"
    filters = segments.parse(text)
    body = get(
        client,
        key,
        "timeseries",
        filters=text,
        metrics="visitors,dau,new_visitors,wau",
        **{"from": days[0].isoformat(), "to": days[-1].isoformat()},
    ).json()
    assert body["filters"] == text and body["estimate"] is False
    for row in body["results"]:
        day = date.fromisoformat(row["date"])
        people = brute.segment(day, filters)
        assert (row["visitors"], row["dau"], row["new_visitors"]) == (
            len(people),
            len(people),
            len(people & brute.new[day]),
        )
        assert row["wau"] == len(set().union(*(brute.segment(day - timedelta(days=n), filters) for n in range(7))))
    week = get(
        client,
        key,
        "timeseries",
        filters=text,
        interval="week",
        **{"from": days[0].isoformat(), "to": days[-1].isoformat()},
    ).json()
    for row in week["results"]:
        first = max(date.fromisoformat(row["date"]), days[0])
        members = [d for d in days if first <= d < date.fromisoformat(row["date"]) + timedelta(days=7)]
        assert row["visitors"] == len(set().union(*(brute.segment(d, filters) for d in members)))
    aggregate = get(
        client,
        key,
        "aggregate",
        filters=text,
        compare="previous_period",
        **{"from": days[0].isoformat(), "to": days[-1].isoformat()},
    ).json()
    assert aggregate["results"]["visitors"]["value"] == len(set().union(*(brute.segment(d, filters) for d in days)))
    assert aggregate["results"]["visits"]["value"] is None  # (visits exist per value, not per combination)
    assert aggregate["compared"] == {
        "from": (days[0] - timedelta(days=DAYS)).isoformat(),
        "to": (days[0] - timedelta(days=1)).isoformat(),
    }


def test_a_single_value_filter_has_its_own_exact_counts(world, client):
    key, brute, days = world
    span = {"from": days[0].isoformat(), "to": days[-1].isoformat()}
    one = get(client, key, "aggregate", filters="source==Google", **span).json()["results"]
    rows = get(client, key, "breakdown", property="source", **span).json()["results"]
    google = next(row for row in rows if row["source"] == "Google")
    assert one["visits"]["value"] == google["visits"] and one["bounce_rate"]["value"] == google["bounce_rate"]
    assert one["pageviews"]["value"] == google["pageviews"]


def test_breakdowns_pages_and_retention_under_filters(world, client):
    key, brute, days = world
    span = {"from": days[0].isoformat(), "to": days[-1].isoformat()}
    filters = segments.parse("country==DE")
    body = get(client, key, "breakdown", property="source", filters="country==DE", **span).json()
    assert body["estimate"] is False
    expected = {
        s: len(set().union(*(brute.by[d, "source", s] & brute.segment(d, filters) for d in days)))
        for s in {s for (_, p, s) in brute.by if p == "source"}
    }
    assert {row["source"]: row["visitors"] for row in body["results"]} == {s: n for s, n in expected.items() if n}
    pages = get(client, key, "pages", filters="country==DE", **span).json()["results"]
    assert pages[0]["visitors"] == max(
        len(set().union(*(brute.by[d, "page", p] & brute.segment(d, filters) for d in days)))
        for p in {p for (_, k, p) in brute.by if k == "page"}
    )
    cohorts = get(client, key, "retention", filters="country==DE", periods=3, **span).json()["cohorts"]
    for row in cohorts:
        day = date.fromisoformat(row["cohort"])
        cohort = brute.new[day] & brute.segment(day, filters)
        assert row["size"] == len(cohort)
        assert row["retained"] == [
            len(cohort & brute.active[day + timedelta(days=n)]) for n in range(len(row["retained"]))
        ]


@pytest.mark.parametrize(
    "path, params, problem",
    [
        ("timeseries", {"filters": "colour==red"}, "filters: 'colour': unknown property"),
        (
            "timeseries",
            {"filters": "source==Google", "interval": "hour", "from": date.today().isoformat()},
            "not available with interval=hour",
        ),
        ("breakdown", {"filters": "source==Google", "property": "exit_page"}, "not available with property=exit_page"),
        (
            "breakdown",
            {"filters": "source==Google", "property": "country", "metrics": "visits"},
            "rows have visitors only",
        ),
        ("aggregate", {"filters": "source=Google"}, "expected property==value"),
        ("aggregate", {"compare": "decade"}, "compare: must be one of previous_period, year"),
    ],
)
def test_bad_filters_are_a_400_naming_the_problem(world, client, path, params, problem):
    key, _, _ = world
    response = get(client, key, path, **params)
    assert response.status_code == 400
    assert problem in response.json()["error"]


def test_an_export_of_a_filtered_view_has_the_filtered_numbers(world, client):
    key, brute, days = world
    text = "country==DE"
    filters = segments.parse(text)
    response = client.get(
        "/api/v1/reports/json",
        {"site": "example.com", "from": days[0].isoformat(), "to": days[-1].isoformat(), "filters": text},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    report = response.json()
    assert report["filters"] == text and report["estimate"] is False
    summary = dict((row[0], row[1]) for row in report["tables"]["summary"]["rows"])
    assert summary["visitors"] == len(set().union(*(brute.segment(d, filters) for d in days)))
    daily = {row[0]: row[3] for row in report["tables"]["daily"]["rows"]}  # (date, visitors, pageviews, dau, ...)
    assert daily == {d.isoformat(): len(brute.segment(d, filters)) for d in days}
    sources = {row[0]: row[1] for row in report["tables"]["source"]["rows"]}
    assert sources["Google"] == len(
        set().union(*(brute.by[d, "source", "Google"] & brute.segment(d, filters) for d in days))
    )


def test_a_filtered_export_job_keeps_its_filters(world, client):
    key, brute, days = world
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    response = client.get(
        "/api/v1/reports/json",
        {
            "site": "example.com",
            "from": days[0].isoformat(),
            "to": days[-1].isoformat(),
            "filters": "source!=Google",
            "async": "1",
        },
        **auth,
    )
    assert response.status_code == 202
    report = client.get(response.json()["file_url"], **auth).json()  # (the job ran at once: Celery is eager in tests)
    assert report["filters"] == "source!=Google"
    assert {row[0]: row[1] for row in report["tables"]["source"]["rows"]}.get("Google") is None


@pytest.mark.parametrize("path, params", [("realtime", {}), ("near", {"lat": "52.5", "lon": "13.4", "km": "50"})])
def test_endpoints_that_cannot_filter_refuse_filters_rather_than_ignore_them(world, client, path, params):
    key, _, _ = world
    response = get(client, key, path, filters="source==Google", **params)
    assert response.status_code == 400 and f"filters: not available on /{path}" in response.json()["error"]


def test_a_timeseries_can_carry_its_comparison(world, client):
    key, brute, days = world
    text = "source==Google"
    filters = segments.parse(text)
    half = days[6:]
    body = get(
        client,
        key,
        "timeseries",
        filters=text,
        compare="previous_period",
        metrics="visitors",
        **{"from": half[0].isoformat(), "to": half[-1].isoformat()},
    ).json()
    before = body["comparison"]
    assert (before["from"], before["to"]) == (days[0].isoformat(), days[5].isoformat())
    assert [row["visitors"] for row in before["results"]] == [len(brute.segment(d, filters)) for d in days[:6]]
    year = get(
        client, key, "timeseries", compare="year", **{"from": half[0].isoformat(), "to": half[-1].isoformat()}
    ).json()
    assert year["comparison"]["from"] == half[0].replace(year=half[0].year - 1).isoformat()
    assert all(row["visitors"] == 0 for row in year["comparison"]["results"])
