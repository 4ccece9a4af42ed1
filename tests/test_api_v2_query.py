"""POST /api/v2/query, Plausible's Stats API v2: its request and answer shapes (from
Plausible's documented examples), the same numbers as Tally's own /api/v1/stats/* for the
same question, and every mistake a 400 naming it (401 for a key, 404 for a site)."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.api import responses
from analytics.models import Goal, Site
from tests.test_api_filters import get, world  # noqa: F401 (a fixture)

pytestmark = pytest.mark.one_leg  # (a translation onto the runner, whose numbers are tested on every server)


def ask(client, key, body, raw=None):
    return client.post(
        "/api/v2/query",
        raw if raw is not None else json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )


def span(days):
    return [days[0].isoformat(), days[-1].isoformat()]


def v1_span(days):
    return {"from": days[0].isoformat(), "to": days[-1].isoformat()}


def test_it_answers_an_aggregate_in_plausibles_shape(world, client):  # noqa: F811
    key, _, days = world
    metrics = ["visitors", "visits", "pageviews", "views_per_visit", "bounce_rate", "visit_duration"]
    body = ask(client, key, {"site_id": "example.com", "metrics": metrics, "date_range": span(days)}).json()
    assert set(body) == {"results", "meta", "query"}
    assert len(body["results"]) == 1 and body["results"][0]["dimensions"] == []
    own = get(client, key, "aggregate", metrics=",".join(metrics), **v1_span(days)).json()["results"]
    assert body["results"][0]["metrics"] == [own[m]["value"] for m in metrics]
    assert body["meta"] == {"estimate": False, "estimates": {}}
    assert body["query"] == {
        "site_id": "example.com",
        "metrics": metrics,
        "date_range": [f"{days[0].isoformat()}T00:00:00Z", f"{days[-1].isoformat()}T23:59:59Z"],
        "filters": [],
        "dimensions": [],
        "order_by": [["visitors", "desc"]],
        "include": {},
        "pagination": {"limit": 10000, "offset": 0},
    }


def test_a_timeseries_by_day_has_a_row_per_day_with_data(world, client):  # noqa: F811
    key, _, days = world
    wide = [days[0] - timedelta(days=2), *days]  # (two days without data first)
    body = ask(
        client,
        key,
        {
            "site_id": "example.com",
            "metrics": ["visitors", "pageviews", "bounce_rate"],
            "date_range": span(wide),
            "dimensions": ["time:day"],
            "include": {"time_labels": True, "imports": True},
        },
    ).json()
    own = get(client, key, "timeseries", metrics="visitors,pageviews,bounce_rate", **v1_span(wide)).json()["results"]
    expected = [
        {"metrics": [row["visitors"], row["pageviews"], row["bounce_rate"]], "dimensions": [row["date"]]}
        for row in own
        if row["visitors"] or row["pageviews"]
    ]
    assert body["results"] == expected and len(expected) == len(days)
    assert body["meta"]["time_labels"] == [row["date"] for row in own]
    assert body["query"]["order_by"] == [["time:day", "asc"]]
    assert body["query"]["include"] == {"time_labels": True, "imports": True}


def test_week_and_month_rows_are_tallys(world, client):  # noqa: F811
    key, _, days = world
    for interval in ("week", "month"):
        body = ask(
            client,
            key,
            {
                "site_id": "example.com",
                "metrics": ["visitors"],
                "date_range": span(days),
                "dimensions": [f"time:{interval}"],
            },
        ).json()
        own = get(client, key, "timeseries", metrics="visitors", interval=interval, **v1_span(days)).json()
        assert body["results"] == [{"metrics": [r["visitors"]], "dimensions": [r["date"]]} for r in own["results"]]


@pytest.mark.parametrize(
    "dimension,tally", [("visit:source", "source"), ("visit:country", "country"), ("event:page", "page")]
)
def test_a_breakdown_is_tallys_rows_ordered_and_paged(world, client, dimension, tally):  # noqa: F811
    key, _, days = world
    own = get(client, key, "breakdown", property=tally, limit=1000, **v1_span(days)).json()
    everyone = [[row[tally], row["visitors"], row["pageviews"]] for row in own["results"]]
    query = {"site_id": "example.com", "metrics": ["visitors", "pageviews"], "date_range": span(days)}
    body = ask(client, key, {**query, "dimensions": [dimension], "include": {"total_rows": True}}).json()
    assert [[*row["dimensions"], *row["metrics"]] for row in body["results"]] == everyone
    assert body["meta"]["total_rows"] == own["total"] == len(everyone)
    # order_by and pagination
    paged = ask(
        client,
        key,
        {
            **query,
            "dimensions": [dimension],
            "order_by": [["pageviews", "asc"], [dimension, "desc"]],
            "pagination": {"limit": 2, "offset": 1},
        },
    ).json()
    ordered = sorted(sorted(everyone, key=lambda row: row[0], reverse=True), key=lambda row: row[2])
    assert [[*row["dimensions"], *row["metrics"]] for row in paged["results"]] == ordered[1:3]
    assert paged["query"]["pagination"] == {"limit": 2, "offset": 1}


def test_percentage_is_of_the_audiences_visitors(world, client):  # noqa: F811
    key, _, days = world
    query = {"site_id": "example.com", "date_range": span(days), "dimensions": ["visit:source"]}
    body = ask(client, key, {**query, "metrics": ["visitors", "percentage"]}).json()
    total = get(client, key, "aggregate", metrics="visitors", **v1_span(days)).json()["results"]["visitors"]["value"]
    for row in body["results"]:
        assert row["metrics"][1] == round(100 * row["metrics"][0] / total, 2)


def test_filters_are_tallys_filters(world, client):  # noqa: F811
    key, _, days = world
    query = {"site_id": "example.com", "metrics": ["visitors"], "date_range": span(days)}
    cases = [
        ([["is", "visit:source", ["Google", "newsletter"]]], "source==Google|newsletter"),
        ([["is_not", "visit:country", ["FR"]], ["contains", "event:page", ["blog"]]], "country!=FR;page~blog"),
        ([["and", [["is", "visit:country", ["DE"]], ["contains", "visit:source", ["goo"]]]]], "country==DE;source~goo"),
        ([["contains_not", "event:page", ["blog", "pric"]]], "page!~blog|pric"),
        (
            [["or", [["is", "visit:source", ["Google"]], ["is", "visit:source", ["newsletter"]]]]],
            "source==Google|newsletter",
        ),
        ([["not", ["or", [["is", "visit:country", ["FR"]], ["is", "visit:country", ["DE"]]]]]], "country!=FR|DE"),
        ([["not", ["contains", "event:page", ["blog"]]]], "page!~blog"),
        ([["has_not_done", ["is", "event:page", ["/pricing"]]]], "page!=/pricing"),
        (
            [["has_done", ["is", "event:page", ["/pricing"]]], ["is", "visit:country", ["DE"]]],
            "page==/pricing;country==DE",
        ),
    ]
    for filters, text in cases:
        body = ask(client, key, {**query, "filters": filters}).json()
        own = get(client, key, "aggregate", metrics="visitors", filters=text, **v1_span(days)).json()
        assert body["results"][0]["metrics"] == [own["results"]["visitors"]["value"]], text
        assert body["query"]["filters"] == filters and body["meta"]["estimate"] == own["estimate"]
        rows = ask(client, key, {**query, "filters": filters, "dimensions": ["visit:device"]}).json()["results"]
        own_rows = get(client, key, "breakdown", property="device", filters=text, limit=1000, **v1_span(days)).json()
        assert [[*r["dimensions"], *r["metrics"]] for r in rows] == [
            [r["device"], r["visitors"]] for r in own_rows["results"]
        ]


def test_goals_have_conversion_rates(world, client):  # noqa: F811
    key, _, days = world
    site = Site.objects.get(domain="example.com")
    Goal.objects.create(site=site, name="Blog", page_pattern="/blog/*")
    query = {"site_id": "example.com", "date_range": span(days)}
    rows = ask(
        client, key, {**query, "metrics": ["visitors", "events", "conversion_rate"], "dimensions": ["event:goal"]}
    )
    own = get(client, key, "breakdown", property="goal", **v1_span(days)).json()["results"]
    assert rows.json()["results"] == [
        {"metrics": [r["visitors"], r["events"], r["conversion_rate"]], "dimensions": [r["goal"]]} for r in own
    ]
    blog = ask(
        client, key, {**query, "metrics": ["visitors", "conversion_rate"], "filters": [["is", "event:goal", ["Blog"]]]}
    )
    converted, rate = blog.json()["results"][0]["metrics"]
    everyone = get(client, key, "aggregate", metrics="visitors", **v1_span(days)).json()["results"]["visitors"]["value"]
    assert converted == own[0]["visitors"] and rate == round(100 * converted / everyone, 2)


def test_named_date_ranges(world, client):  # noqa: F811
    key, _, days = world
    today = datetime.now(UTC).date()
    for name, first, last in [
        ("day", today, today),
        ("7d", today - timedelta(days=7), today - timedelta(days=1)),
        ("28d", today - timedelta(days=28), today - timedelta(days=1)),
    ]:
        body = ask(client, key, {"site_id": "example.com", "metrics": ["visitors"], "date_range": name}).json()
        assert body["query"]["date_range"] == [f"{first}T00:00:00Z", f"{last}T23:59:59Z"], name
    for name in ("30d", "month", "6mo", "12mo", "year", "all"):
        assert (
            ask(client, key, {"site_id": "example.com", "metrics": ["visitors"], "date_range": name}).status_code == 200
        )
    anchored = ask(
        client, key, {"site_id": "example.com", "metrics": ["visitors"], "date_range": "day", "date": str(days[0])}
    )
    assert anchored.json()["query"]["date_range"][0] == f"{days[0]}T00:00:00Z"


def test_the_date_range_is_in_the_sites_time_zone(make_site, client):
    _, key = make_site(timezone="Europe/Berlin")
    body = ask(
        client, key, {"site_id": "example.com", "metrics": ["visitors"], "date_range": ["2026-01-05", "2026-01-06"]}
    ).json()
    assert body["query"]["date_range"] == ["2026-01-05T00:00:00+01:00", "2026-01-06T23:59:59+01:00"]
    assert body["results"] == [{"metrics": [0], "dimensions": []}]


BAD = [
    ({"metrics": ["visitors"], "date_range": "7d"}, "site_id: Field required"),
    ({"site_id": "example.com", "date_range": "7d"}, "metrics: Field required"),
    ({"site_id": "example.com", "metrics": ["visitors"]}, "date_range: Field required"),
    ({"site_id": "example.com", "metrics": [], "date_range": "7d"}, "metrics: List should have at least 1 item"),
    ({"site_id": "example.com", "metrics": ["vistors"], "date_range": "7d"}, "Unknown metric 'vistors'."),
    ({"site_id": "example.com", "metrics": ["visitors"], "date_range": "8mo8"}, "Invalid date_range '8mo8'"),
    ({"site_id": "example.com", "metrics": ["visitors"], "date_range": ["2026-01-01"]}, "Invalid date_range"),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": ["2026-13-01", "2026-01-02"]},
        "Invalid date_range",
    ),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": ["2020-01-01", "2026-01-02"]},
        "at most 731 days",
    ),
    ({"site_id": "example.com", "metrics": ["visitors"], "date_range": "realtime"}, "whole days"),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": "7d", "dimensions": ["visit:planet"]},
        "Invalid dimensions 'visit:planet'",
    ),
    (
        {
            "site_id": "example.com",
            "metrics": ["visitors"],
            "date_range": "day",
            "dimensions": ["time:hour", "visit:os"],
        },
        "dimensions: time:hour with another dimension",
    ),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": "30d", "dimensions": ["time:hour"]},
        "time:hour covers at most 2 days",
    ),
    (
        {"site_id": "example.com", "metrics": ["events"], "date_range": "7d"},
        "Metric `events` is not available with no dimension",
    ),
    (
        {"site_id": "example.com", "metrics": ["conversion_rate"], "date_range": "7d"},
        "Metric `conversion_rate` can only be queried with event:goal",
    ),
    (
        {"site_id": "example.com", "metrics": ["percentage"], "date_range": "7d"},
        "Metric `percentage` requires a dimension",
    ),
    (
        {"site_id": "example.com", "metrics": ["visits"], "date_range": "7d", "dimensions": ["event:page"]},
        "Metric `visits` is not available with dimension event:page",
    ),
    (
        {
            "site_id": "example.com",
            "metrics": ["visitors"],
            "date_range": "7d",
            "filters": [["matches", "event:page", ["^/b"]]],
        },
        "Tally's filters have is, is_not, contains and contains_not",
    ),
    (
        {
            "site_id": "example.com",
            "metrics": ["visitors"],
            "date_range": "7d",
            "filters": [["or", [["is", "visit:os", ["Mac"]], ["is", "visit:country", ["DE"]]]]],
        },
        "filters on different dimensions are all joined by and",
    ),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": "7d", "filters": [["is", "visit:os", "Mac"]]},
        "must be a list of strings",
    ),
    (
        {
            "site_id": "example.com",
            "metrics": ["visitors"],
            "date_range": "7d",
            "filters": [["is", "visit:exit_page", ["/"]]],
        },
        "cannot filter by visit:exit_page",
    ),
    (
        {
            "site_id": "example.com",
            "metrics": ["visitors"],
            "date_range": "7d",
            "filters": [["contains", "event:goal", ["x"]]],
        },
        "goals are matched by name",
    ),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": "7d", "filters": [["is", "visit:os", []]]},
        "a value is empty",
    ),
    (
        {
            "site_id": "example.com",
            "metrics": ["visitors"],
            "date_range": "7d",
            "filters": [["equals", "visit:os", ["Mac"]]],
        },
        "Unknown operator for filter",
    ),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": "7d", "order_by": [["visits", "desc"]]},
        "Entry is not a queried metric or dimension",
    ),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": "7d", "order_by": [["visitors", "up"]]},
        "order_by.0.1",
    ),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": "7d", "pagination": {"limit": 0}},
        "pagination.limit",
    ),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": "7d", "include": {"time_labels": True}},
        "Invalid include.time_labels: requires a time dimension.",
    ),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": "7d", "include": {"comparisons": {}}},
        "include.comparisons",
    ),
    (
        {"site_id": "example.com", "metrics": ["visitors"], "date_range": "7d", "colour": "red"},
        "colour: Extra inputs are not permitted",
    ),
    (
        {
            "site_id": "example.com",
            "metrics": ["visitors"],
            "date_range": "day",
            "dimensions": ["time:hour"],
            "filters": [["is", "visit:os", ["Mac"]]],
        },
        "filters: not available with time:hour",
    ),
    (
        {
            "site_id": "example.com",
            "metrics": ["visitors"],
            "date_range": "7d",
            "dimensions": ["event:props:plan"],
            "filters": [["is", "visit:os", ["Mac"]]],
        },
        "filters: not available with dimension event:props:plan",
    ),
]


@pytest.mark.parametrize("body,message", BAD)
def test_each_mistake_is_a_400_naming_it(make_site, client, body, message):
    _, key = make_site()
    response = ask(client, key, body)
    assert response.status_code == 400, response.content
    assert message in response.json()["error"]


def test_a_body_that_is_no_json_object_is_a_400(make_site, client):
    _, key = make_site()
    for raw, message in [("{", "body: not valid JSON"), ("[1]", "body: expected a JSON object"), ("", "empty body")]:
        response = ask(client, key, None, raw=raw)
        assert response.status_code == 400 and message in response.json()["error"], raw


def test_keys_and_sites(make_site, client):
    _, key = make_site()
    _, other_key = make_site("other.org")
    query = {"site_id": "example.com", "metrics": ["visitors"], "date_range": "7d"}
    assert ask(client, "nonsense", query).status_code == 401
    assert client.post("/api/v2/query", json.dumps(query), content_type="application/json").status_code == 401
    assert ask(client, other_key, query).status_code == 404  # (another site's key: as if unknown)
    assert ask(client, key, {**query, "site_id": "nowhere.net"}).status_code == 404
    assert ask(client, key, {**query, "site_id": "Example.com"}).status_code == 200
    assert client.get("/api/v2/query", HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 405


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
FIELDS = st.sampled_from(
    ["site_id", "metrics", "date_range", "dimensions", "filters", "order_by", "pagination", "include", "date"]
)
NEAR = st.fixed_dictionaries(
    {
        "site_id": st.just("example.com"),
        "metrics": st.just(["visitors"])
        | st.lists(st.sampled_from(["visitors", "events", "percentage", "conversion_rate", "bounce_rate"])),
        "date_range": st.just("7d") | JSON | st.sampled_from(["all", "year", "0d", "5001d", "101mo", "1mo"]),
    },
    optional={
        "dimensions": st.lists(st.sampled_from(["time", "time:hour", "event:page", "visit:source", "event:goal", "x"])),
        "filters": st.lists(st.lists(JSON | st.sampled_from(["is", "contains", "and", "visit:os", "event:goal"]))),
        "order_by": JSON,
        "pagination": st.dictionaries(st.sampled_from(["limit", "offset"]), JSON),
        "include": st.dictionaries(st.sampled_from(["total_rows", "time_labels", "imports"]), JSON),
    },
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.dictionaries(FIELDS, JSON) | NEAR | JSON)
def test_no_body_is_a_500(make_site, client, body):
    Site.objects.filter(domain="example.com").delete()
    _, key = make_site()
    response = ask(client, key, body)
    assert response.status_code in (200, 400, 404), (body, response.content)
    assert "error" in response.json() or "results" in response.json()


def test_answers_have_exactly_the_documented_keys(world, client):  # noqa: F811
    import jsonschema

    key, _, days = world
    spec = client.get("/api/v1/openapi.json").json()
    post = spec["paths"]["/api/v2/query"]["post"]
    answer = post["responses"]["200"]["content"]["application/json"]["schema"]
    request = post["requestBody"]["content"]["application/json"]["schema"]
    validators = [
        jsonschema.Draft202012Validator({**schema, "components": spec["components"]}) for schema in (request, answer)
    ]
    query = {"site_id": "example.com", "metrics": ["visitors", "pageviews"], "date_range": span(days)}
    for body in [
        query,
        {**query, "dimensions": ["time:day"], "include": {"time_labels": True, "total_rows": True}},
        {**query, "dimensions": ["time:hour"], "date_range": "day"},
        {
            **query,
            "dimensions": ["visit:source"],
            "filters": [["is", "visit:country", ["DE"]]],
            "metrics": ["visitors"],
        },
        {**query, "dimensions": ["event:page"], "order_by": [["pageviews", "desc"]], "pagination": {"limit": 3}},
    ]:
        response = ask(client, key, body)
        assert response.status_code == 200, (body, response.content)
        responses.QueryAnswer.model_validate(response.json())  # (extra keys forbidden: the model is the answer)
        for validator, document in zip(validators, (body, response.json())):
            errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]
            assert not errors, (body, errors[:5])


def test_all_starts_at_the_first_counted_day_when_history_is_older_than_the_site(make_site, client):
    from analytics.models import DailyMetrics, Site

    site, key = make_site()
    site = Site.objects.get(pk=site.pk) if not isinstance(site, Site) else site
    older = site.created.date() - timedelta(days=100)  # (an import of last year's history, say)
    # (new_visitors None: the row of a day stored while the site counted with a daily salt)
    DailyMetrics.objects.create(site=site, date=older, visitors=3, pageviews=5, final=True)
    body = ask(client, key, {"site_id": site.domain, "metrics": ["visitors"], "date_range": "all"}).json()
    assert body["query"]["date_range"][0] == f"{older}T00:00:00Z"
    v1 = client.get(
        f"/api/v1/stats/aggregate?site={site.domain}&from={older}&to={older}&metrics=pageviews,new_visitors",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert v1.status_code == 200  # (it was a 500: a sum over a None)
    assert v1.json()["results"] == {"pageviews": {"value": 5}, "new_visitors": {"value": None}}


def test_country_names_are_the_countries_named(world, client):  # noqa: F811
    key, _, days = world
    query = {"site_id": "example.com", "metrics": ["visitors"], "date_range": span(days)}
    by_code = ask(client, key, {**query, "dimensions": ["visit:country"]}).json()["results"]
    by_name = ask(client, key, {**query, "dimensions": ["visit:country_name"]}).json()["results"]
    names = {"DE": "Germany", "FR": "France", "US": "United States"}
    assert by_name == [{"metrics": r["metrics"], "dimensions": [names[r["dimensions"][0]]]} for r in by_code]
    named = ask(client, key, {**query, "filters": [["is_not", "visit:country_name", ["germany"]]]}).json()
    coded = ask(client, key, {**query, "filters": [["is_not", "visit:country", ["DE"]]]}).json()
    assert named["results"] == coded["results"]
    bad = ask(client, key, {**query, "filters": [["is", "visit:country_name", ["Atlantis"]]]})
    assert bad.status_code == 400 and "no country named 'Atlantis'" in bad.json()["error"]


@pytest.mark.parametrize("time", ["time:day", "time:week"])
def test_a_time_dimension_with_another_is_the_others_breakdown_in_each_period(world, client, time):  # noqa: F811
    key, _, days = world
    query = {"site_id": "example.com", "metrics": ["visitors", "pageviews"], "date_range": span(days)}
    body = ask(client, key, {**query, "dimensions": [time, "event:page"], "include": {"time_labels": True}}).json()
    labels = body["meta"]["time_labels"]
    assert labels == sorted(labels) and body["results"]
    expected = []
    for label in labels:
        first = max(datetime.fromisoformat(label).date(), days[0])
        last = min(first + timedelta(days=0 if time == "time:day" else 6 - first.weekday()), days[-1])
        rows = ask(client, key, {**query, "dimensions": ["event:page"], "date_range": span([first, last])}).json()
        expected += [{"metrics": r["metrics"], "dimensions": [label, *r["dimensions"]]} for r in rows["results"]]
    assert body["results"] == expected
    flipped = ask(client, key, {**query, "dimensions": ["event:page", time]}).json()["results"]
    assert [[*r["dimensions"][::-1], *r["metrics"]] for r in flipped] == [
        [*r["dimensions"], *r["metrics"]] for r in expected
    ]
    paged = ask(client, key, {**query, "dimensions": [time, "event:page"], "pagination": {"limit": 3, "offset": 2}})
    assert paged.json()["results"] == expected[2:5]
    two = ask(client, key, {**query, "dimensions": ["visit:source", "visit:country"]})
    assert two.status_code == 400 and "a time dimension and one other" in two.json()["error"]


def test_a_custom_property_filters_the_visitors_as_plausible_names_it(make_site, client, r):
    from analytics.ingest import Hit, record
    from analytics.ingest.identity import identity_source
    from analytics.sites import SiteInfo

    site, key = make_site()
    now = datetime.now(UTC)
    hits = [Hit(now, "/", "pageview", identity_source(None, f"v{n}", None, None)) for n in range(10)]
    hits += [
        Hit(now, "/signup", "Signup", identity_source(None, f"v{n}", None, None), props=(("plan", plan),))
        for n, plan in enumerate(["team", "team", "free"])
    ]
    record(r, SiteInfo.from_model(site), hits)
    for op, values, visitors in (("is", ["team"], 2), ("is_not", ["team"], 8), ("contains", ["e"], 3)):
        body = {"site_id": "example.com", "metrics": ["visitors"], "date_range": "day"}
        body["filters"] = [[op, "event:props:plan", values]]
        answer = ask(client, key, body)
        assert answer.status_code == 200, answer.content
        assert answer.json()["results"][0]["metrics"] == [visitors], (op, values)
