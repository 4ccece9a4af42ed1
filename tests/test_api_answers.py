"""Every JSON answer of the API is its response model (analytics/api/responses.py, which
the OpenAPI document's schemas are made from): real answers on real data, validated by
the model with extra keys forbidden and types strict, and by the document's schema, so a
key an answer gains, or one the document states wrongly, fails here."""

from datetime import UTC, datetime, timedelta

import jsonschema
import orjson
import pytest

from analytics.api import openapi, params, responses
from analytics.models import Funnel, Goal, Site
from analytics.queries import AGGREGATE_METRICS
from tests.test_api_filters import get, world  # noqa: F401 (a fixture)
from tests.test_filters_past_expiry import aged  # noqa: F401 (a fixture)
from tests.test_openapi import ASKED
from tests.test_places import NETS, city_db  # noqa: F401 (a fixture)

pytestmark = pytest.mark.one_leg  # (the answers' shapes: the same on every server)

READ = {
    "timeseries": responses.TimeseriesAnswer,
    "aggregate": responses.AggregateAnswer,
    "breakdown": responses.BreakdownAnswer,
    "funnel": responses.FunnelAnswer,
    "near": responses.NearAnswer,
    "pages": responses.PagesAnswer,
    "retention": responses.RetentionAnswer,
    "realtime": responses.RealtimeAnswer,
    "dropped": responses.DroppedAnswer,
}
UA = "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"


def valid(model, response, status: int = 200) -> dict:
    """The answer, after its model (strict, no other keys) and the document say it is one."""
    assert response.status_code == status, response.content
    model.model_validate_json(response.content, strict=True)
    schema = {"$ref": openapi.REF.format(model=model.__name__), "components": openapi.DOCUMENT["components"]}
    errors = jsonschema.Draft202012Validator(schema).iter_errors(response.json())
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]
    assert not problems, problems[:5]
    return response.json()


def bearer(key: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}


@pytest.mark.parametrize("path", ASKED)
def test_each_read_answer_is_its_model(world, client, path):  # noqa: F811 (the fixture)
    key, _, days = world
    Funnel.objects.create(site=Site.objects.get(domain="example.com"), name="Tour", steps="/\n/pricing")
    span = {"from": days[0].isoformat(), "to": days[-1].isoformat()}
    for asked in ASKED[path]:
        valid(READ[path], get(client, key, path, **(asked if "period" in asked else {**span, **asked})))


def test_answers_with_goals_properties_revenue_users_and_jobs_are_their_models(client, make_site):
    site, key = make_site()
    Goal.objects.create(site=site, name="Signup", event_name="Signup")
    now = datetime.now(UTC)
    ts = max(now - timedelta(hours=1), now.replace(hour=0, minute=0)).isoformat()
    events = [
        {"url": f"https://example.com/p{n % 4}", "ts": ts, "visitor": f"v{n}", "user_agent": UA} for n in range(12)
    ]
    events += [
        {
            "url": "https://example.com/signup",
            "ts": ts,
            "visitor": f"v{n}",
            "name": "Signup",
            "props": {"plan": "pro" if n % 2 else "free"},
            "revenue": {"currency": "EUR", "amount": "12.50"},
        }
        for n in range(4)
    ]
    events += [{"url": "https://example.com/p1", "ts": ts, "user_id": "ann"}, {"ts": ts}]  # (the last: no url)
    batch = client.post("/api/v1/events", orjson.dumps(events), content_type="application/json", **bearer(key))
    assert valid(responses.BatchResult, batch)["rejected"][0]["index"] == len(events) - 1

    today = {"from": now.date().isoformat(), "to": now.date().isoformat()}
    goals = valid(responses.BreakdownAnswer, get(client, key, "breakdown", property="goal", **today))
    assert goals["results"][0]["revenue"] == {"EUR": 50.0}
    for asked in (
        {"property": "event:props:plan"},
        {"property": "event:props:plan", "event": "Signup", "metrics": "events"},
        {"property": "goal", "metrics": "revenue,conversion_rate"},
        {"property": "visit:source", "search": "direct", "limit": 1, "page": 2},
        {"property": "page", "metrics": "pageviews"},
        {"property": "goal", "filters": "page==/p1"},
    ):
        valid(responses.BreakdownAnswer, get(client, key, "breakdown", **today, **asked))
    for asked in (
        {"period": "day", "interval": "hour", "metrics": "visitors"},
        {"period": "7d", "compare": "year"},
        {"period": "7d", "metrics": "visitors,wau,mau,stickiness"},
        {"interval": "week", "filters": "goal==Signup", "compare": "previous_period"},
    ):
        valid(responses.TimeseriesAnswer, get(client, key, "timeseries", **asked))
    valid(responses.AggregateAnswer, get(client, key, "aggregate", period="day", compare="previous_period"))
    valid(responses.AggregateAnswer, get(client, key, "aggregate", metrics="visits,bounce_rate", filters="page==/p1"))
    valid(responses.RealtimeAnswer, get(client, key, "realtime"))
    valid(responses.RetentionAnswer, get(client, key, "retention", unit="week", periods=2))
    valid(responses.DroppedAnswer, get(client, key, "dropped", period="7d"))

    def recommended(user: str):
        answer = client.get("/api/v1/recommendations", {"site": "example.com", "user": user}, **bearer(key))
        return valid(responses.RecommendationsAnswer, answer)

    assert "/p1" not in [p["page"] for p in recommended("ann")["pages"]]
    assert recommended("bob")["pages"]
    seen = {"user": "bob", "items": ["/p1", "/p2"]}
    valid(responses.SeenAnswer, client.post("/api/v1/seen", seen, content_type="application/json", **bearer(key)))
    valid(responses.UnseenAnswer, client.post("/api/v1/unseen", seen, content_type="application/json", **bearer(key)))

    job = valid(
        responses.NewExport,
        client.get("/api/v1/reports/json", {"site": "example.com", "async": "1", **today}, **bearer(key)),
        202,
    )
    status = valid(responses.ExportJob, client.get(f"/api/v1/reports/jobs/{job['job']}", **bearer(key)))
    assert status["state"] == "done"

    valid(responses.Error, get(client, key, "breakdown", property="colour"), 400)
    valid(responses.Error, get(client, "wrong", "aggregate"), 401)


def test_estimated_answers_are_their_models(aged, client):  # noqa: F811 (the fixture)
    """Past the keys' expiry numbers are estimates, and the answers say why: per row, per
    metric, per breakdown row."""
    info, _, days, _ = aged
    key = Site.objects.get(pk=info.id).create_api_key("answers")
    Funnel.objects.create(site_id=info.id, name="Tour", steps="/\n/pricing")
    span = {"from": days[0].isoformat(), "to": days[-1].isoformat()}
    series = valid(responses.TimeseriesAnswer, get(client, key, "timeseries", filters="country==DE", **span))
    assert series["estimate"] and any("estimate" in row for row in series["results"])
    for asked in ({"metrics": "visitors,visits,bounce_rate"}, {"interval": "week", "compare": "previous_period"}):
        valid(responses.TimeseriesAnswer, get(client, key, "timeseries", filters="page==/pricing", **span, **asked))
    totals = valid(responses.AggregateAnswer, get(client, key, "aggregate", **span))["results"]
    assert "estimate" in totals["visitors"]
    valid(responses.AggregateAnswer, get(client, key, "aggregate", filters="page==/pricing", compare="year", **span))
    rows = valid(
        responses.BreakdownAnswer, get(client, key, "breakdown", property="source", filters="country==DE", **span)
    )["results"]
    assert any(row.get("estimate") for row in rows)
    valid(responses.BreakdownAnswer, get(client, key, "breakdown", property="goal", filters="country==DE", **span))
    valid(responses.PagesAnswer, get(client, key, "pages", filters="country==DE", **span))
    valid(responses.RetentionAnswer, get(client, key, "retention", filters="country==DE", **span))
    valid(responses.FunnelAnswer, get(client, key, "funnel", funnel="Tour", filters="country==DE", **span))


def test_near_answers_are_their_model(client, make_site, city_db):  # noqa: F811 (the fixture)
    site, key = make_site()
    day = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0) - timedelta(days=1)
    events = [
        {
            "url": "https://example.com/",
            "ts": day.isoformat(),
            "visitor": f"{city}{v}",
            "ip": f"{net}.{v + 1}",
            "user_agent": UA,
        }
        for city, net in NETS.items()
        for v in range(5)
    ]
    client.post("/api/v1/events", orjson.dumps(events), content_type="application/json", **bearer(key))
    asked = {"from": day.date().isoformat(), "lat": 52.52, "lon": 13.405}
    near = valid(responses.NearAnswer, get(client, key, "near", km=50, **asked))
    assert [c["city"] for c in near["cities"]] == ["Berlin, DE-BE", "Potsdam, DE-BB"]
    valid(responses.NearAnswer, get(client, key, "near", km=1, **{**asked, "lat": 0, "lon": 0}))


def test_every_answer_the_document_names_is_checked_here():
    """Each model a documented answer names is validated against real answers above."""
    named = {
        content["schema"]["$ref"].rpartition("/")[2]
        for item in openapi.DOCUMENT["paths"].values()
        for operation in item.values()
        for answer in operation["responses"].values()
        for content in answer.get("content", {}).values()
        if "$ref" in content.get("schema", {})
    }
    checked = {
        *READ.values(),
        responses.RecommendationsAnswer,
        responses.SeenAnswer,
        responses.UnseenAnswer,
        responses.BatchResult,
        responses.NewExport,
        responses.ExportJob,
        responses.Error,
        responses.QueryAnswer,  # (tests/test_api_v2_query.py checks its answers)
    }
    assert named == {model.__name__ for model in checked}


def test_the_row_models_have_every_metric_the_parameters_take():
    series = {metric for choices in params.SERIES_METRICS.choices.values() for metric in choices}
    assert series <= set(responses.SeriesRow.model_fields)
    assert set(AGGREGATE_METRICS) == set(responses.Totals.model_fields)
