"""Plausible's Stats API v1 on `site_id=` requests: Plausible's documented requests get its
answer shapes, the same numbers as Tally's own `site=` requests for the same question, and
every mistake is a 400 naming it (401 for a key), never a 500."""

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.models import Goal, Site
from tests.test_api_filters import get, world  # noqa: F401 (a fixture)

pytestmark = pytest.mark.one_leg  # (a translation onto the runner, whose numbers are tested on every server)


def v1(client, key, path, **params):
    return client.get(f"/api/v1/stats/{path}", {"site_id": "example.com", **params}, HTTP_AUTHORIZATION=f"Bearer {key}")


def custom(days):
    return {"period": "custom", "date": f"{days[0].isoformat()},{days[-1].isoformat()}"}


def tally(days):
    return {"from": days[0].isoformat(), "to": days[-1].isoformat()}


METRICS = "visitors,visits,pageviews,views_per_visit,bounce_rate,visit_duration"


def test_an_aggregate_with_compare_is_plausibles_shape_and_tallys_numbers(world, client):  # noqa: F811
    key, _, days = world
    response = v1(client, key, "aggregate", metrics=METRICS, compare="previous_period", **custom(days))
    assert response.status_code == 200, response.content
    body = response.json()
    own = get(client, key, "aggregate", metrics=METRICS, compare="previous_period", **tally(days)).json()
    assert list(body) == ["results"]
    assert list(body["results"]) == METRICS.split(",")
    for metric, total in body["results"].items():
        assert total == {"value": own["results"][metric]["value"], "change": own["results"][metric].get("change")}
    assert "Tally-Estimate" not in response.headers


def test_an_aggregate_defaults_to_visitors_over_30_days(world, client):  # noqa: F811
    key, _, days = world
    body = v1(client, key, "aggregate").json()
    own = get(client, key, "aggregate", metrics="visitors", period="30d").json()
    assert body == {"results": {"visitors": {"value": own["results"]["visitors"]["value"]}}}


def test_a_timeseries_by_date_and_by_month(world, client):  # noqa: F811
    key, _, days = world
    body = v1(client, key, "timeseries", metrics="visitors,pageviews,bounce_rate", **custom(days)).json()
    own = get(client, key, "timeseries", metrics="visitors,pageviews,bounce_rate", **tally(days)).json()
    assert body["results"] == [
        {
            "date": row["date"],
            "visitors": row["visitors"],
            "pageviews": row["pageviews"],
            "bounce_rate": row["bounce_rate"],
        }
        for row in own["results"]
    ]
    assert len(body["results"]) == len(days) and list(body) == ["results"]
    monthly = v1(client, key, "timeseries", interval="month", **custom(days)).json()
    own = get(client, key, "timeseries", metrics="visitors", interval="month", **tally(days)).json()
    assert monthly["results"] == [{"date": row["date"], "visitors": row["visitors"]} for row in own["results"]]
    # 6mo and 12mo are by month unless asked otherwise (Plausible's default)
    rows = v1(client, key, "timeseries", period="6mo").json()["results"]
    assert len(rows) == 6 and all(row["date"].endswith("-01") for row in rows)
    assert len(v1(client, key, "timeseries", period="7d", date=days[-1].isoformat()).json()["results"]) == 7


@pytest.mark.parametrize(
    "prop,short", [("visit:source", "source"), ("event:page", "page"), ("visit:country", "country")]
)
def test_a_breakdown_is_keyed_by_the_short_name_and_paged(world, client, prop, short):  # noqa: F811
    key, _, days = world
    own = get(client, key, "breakdown", property=short, limit=1000, **tally(days)).json()["results"]
    body = v1(client, key, "breakdown", property=prop, metrics="visitors,pageviews", **custom(days)).json()
    assert body == {
        "results": [{short: row[short], "visitors": row["visitors"], "pageviews": row["pageviews"]} for row in own]
    }
    paged = v1(client, key, "breakdown", property=prop, limit=2, page=2, **custom(days)).json()
    assert paged["results"] == [{short: row[short], "visitors": row["visitors"]} for row in own[2:4]]


def test_v1_filters_are_tallys_filters(world, client):  # noqa: F811
    key, _, days = world
    for plausible, own_text in [
        ("visit:source==Google|newsletter;visit:country!=FR", "source==Google|newsletter;country!=FR"),
        ("event:page==**a**", "page~a"),
        ("event:page!=**blog**|**pric**", "page!~blog|pric"),
    ]:
        body = v1(client, key, "aggregate", filters=plausible, **custom(days)).json()
        own = get(client, key, "aggregate", metrics="visitors", filters=own_text, **tally(days)).json()
        assert body["results"]["visitors"]["value"] == own["results"]["visitors"]["value"], plausible
        rows = v1(client, key, "breakdown", property="visit:device", filters=plausible, **custom(days)).json()
        own = get(client, key, "breakdown", property="device", filters=own_text, **tally(days)).json()
        assert rows["results"] == [{"device": row["device"], "visitors": row["visitors"]} for row in own["results"]]


def test_goals_have_conversion_rates(world, client):  # noqa: F811
    key, _, days = world
    site = Site.objects.get(domain="example.com")
    Goal.objects.create(site=site, name="Blog", page_pattern="/blog/*")
    rows = v1(
        client, key, "breakdown", property="event:goal", metrics="visitors,events,conversion_rate", **custom(days)
    )
    own = get(client, key, "breakdown", property="goal", **tally(days)).json()["results"]
    assert rows.json()["results"] == [
        {"goal": r["goal"], "visitors": r["visitors"], "events": r["events"], "conversion_rate": r["conversion_rate"]}
        for r in own
    ]
    blog = v1(client, key, "aggregate", metrics="visitors,conversion_rate", filters="event:goal==Blog", **custom(days))
    results = blog.json()["results"]
    everyone = get(client, key, "aggregate", metrics="visitors", **tally(days)).json()["results"]["visitors"]["value"]
    converted = results["visitors"]["value"]
    assert converted == own[0]["visitors"]
    assert results["conversion_rate"] == {"value": round(100 * converted / everyone, 2)}


def test_realtime_visitors_is_a_bare_number(make_site, client):
    _, key = make_site()
    response = client.get(
        "/api/v1/stats/realtime/visitors", {"site_id": "example.com"}, HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 200 and response.content == b"0"


def test_site_requests_are_tallys(world, client):  # noqa: F811
    key, _, days = world
    body = get(client, key, "aggregate", **tally(days)).json()
    assert {"site", "from", "to", "results"} <= set(body)


BAD = [
    ("aggregate", {"metrics": "visitors,foo"}, "unknown metric 'foo'"),
    ("aggregate", {"metrics": "events"}, "events is not available"),
    ("aggregate", {"metrics": "conversion_rate"}, "conversion_rate is not available"),
    ("aggregate", {"metrics": "visitors,visitors"}, "listed twice"),
    ("aggregate", {"period": "90d"}, "period: invalid period '90d'"),
    ("aggregate", {"period": "custom"}, "date: period=custom needs"),
    ("aggregate", {"period": "day", "date": "yesterday"}, "date: not a date"),
    ("aggregate", {"compare": "year"}, "compare: must be one of previous_period"),
    ("aggregate", {"filters": "visit:source=Google"}, "filters:"),
    ("aggregate", {"filters": "visit:nope==x"}, "unknown property"),
    ("aggregate", {"filters": "event:page==/blog**"}, "Tally matches no wildcard pattern"),
    ("aggregate", {"filters": "event:page!=/blog**"}, "Tally matches no wildcard pattern"),
    ("timeseries", {"interval": "week"}, "interval: invalid interval 'week'"),
    ("timeseries", {"compare": "previous_period"}, "compare: not available on timeseries"),
    ("breakdown", {}, "property: must be one of"),
    ("breakdown", {"property": "visit:source", "limit": "0"}, "limit: must be between 1 and 1000"),
    ("breakdown", {"property": "visit:source", "page": "x"}, "page: not an integer"),
    ("breakdown", {"property": "event:page", "metrics": "bounce_rate"}, "bounce_rate is not available"),
    ("breakdown", {"property": "event:props:plan", "filters": "visit:os==Mac"}, "filters: not available"),
]


@pytest.mark.parametrize("path,params,message", BAD)
def test_each_mistake_is_a_400_naming_it(make_site, client, path, params, message):
    _, key = make_site()
    response = v1(client, key, path, **params)
    assert response.status_code == 400, response.content
    assert message in response.json()["error"]


def test_keys_and_sites(make_site, client):
    _, key = make_site()
    _, other_key = make_site("other.org")
    assert v1(client, "nonsense", "aggregate").status_code == 401
    assert v1(client, other_key, "aggregate").status_code == 401
    assert "Invalid API key or site ID" in v1(client, other_key, "aggregate").json()["error"]
    assert client.get("/api/v1/stats/aggregate", {"site_id": "example.com"}).status_code == 401
    assert v1(client, key, "aggregate", site_id="").status_code == 400
    realtime = client.get(
        "/api/v1/stats/realtime/visitors", {"site_id": "other.org"}, HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert realtime.status_code == 401


TEXT = st.text(max_size=20) | st.sampled_from(["", "*", "**", "|", ";", "\\", "==", "!=", "~", ",", "-1", "0"])
QUERY = st.fixed_dictionaries(
    {},
    optional={
        "period": TEXT | st.sampled_from(["day", "7d", "30d", "month", "6mo", "12mo", "custom"]),
        "date": TEXT | st.sampled_from(["2026-01-01", "2026-01-01,2026-02-01", "2020-02-30"]),
        "metrics": TEXT | st.sampled_from(["visitors", "events,conversion_rate", "bounce_rate,visits"]),
        "filters": TEXT
        | st.sampled_from(["visit:source==Google", "event:page==**a**|**b**", "event:goal==X", "visit:os!=*"]),
        "property": TEXT
        | st.sampled_from(["visit:source", "event:page", "event:goal", "event:props:x", "visit:exit_page"]),
        "interval": TEXT | st.sampled_from(["date", "month"]),
        "limit": TEXT,
        "page": TEXT,
        "compare": TEXT | st.just("previous_period"),
    },
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(["aggregate", "timeseries", "breakdown"]), query=QUERY)
def test_no_query_is_a_500(make_site, client, path, query):
    Site.objects.filter(domain="example.com").delete()
    _, key = make_site()
    response = v1(client, key, path, **query)
    assert response.status_code in (200, 400), (query, response.content)
    assert list(response.json()) == (["results"] if response.status_code == 200 else ["error"])


def test_a_day_before_the_range_changes_nothing_but_the_range(world, client):  # noqa: F811
    key, _, days = world
    wide = [days[0] - timedelta(days=1), *days]
    rows = v1(client, key, "timeseries", **custom(wide)).json()["results"]
    assert rows[0]["visitors"] == 0 and len(rows) == len(wide)
