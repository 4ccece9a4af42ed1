"""The OpenAPI document is valid, covers every API route, and says what the read API
answers: real answers are checked against the documented ones."""

import jsonschema
import pytest
from django.urls import get_resolver
from openapi_spec_validator import validate

from analytics.models import Funnel, Site
from tests.test_api_filters import get, world  # noqa: F401 (a fixture)

pytestmark = pytest.mark.one_leg  # (pages, documents and settings over the runner, which every leg tests on its server)


def test_it_is_a_valid_openapi_document(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    validate(response.json())


def routes(patterns, prefix=""):
    import re

    for p in patterns:
        if hasattr(p, "url_patterns"):
            yield from routes(p.url_patterns, prefix + str(p.pattern))
        else:
            yield re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", "/" + prefix + str(p.pattern))


def test_every_api_route_is_documented(client):
    documented = set(client.get("/api/v1/openapi.json").json()["paths"])
    api = {route for route in routes(get_resolver().url_patterns) if route.startswith("/api/")}
    assert api and api == documented


# Real answers against the documented ones: every read endpoint's 200 schema lists its
# keys and allows no others, so a key added to an answer must be documented, and a
# documented key must be what the answer holds.
ASKED = {
    "timeseries": [
        {},
        {"metrics": "visitors,visits,bounce_rate,visit_duration,views_per_visit"},
        {"interval": "week"},
        {"interval": "month", "metrics": "visitors,new_visitors,bounce_rate"},
        {"period": "day", "interval": "hour"},
        {"period": "day", "interval": "hour", "compare": "previous_period"},
        {"filters": "source==Google"},
        {"compare": "previous_period"},
        {"filters": "source==Google;country!=FR", "compare": "year", "metrics": "visitors,visits"},
    ],
    "aggregate": [
        {},
        {"compare": "previous_period"},
        {"period": "day", "compare": "previous_period"},
        {"filters": "source==Google"},
        {"filters": "country==DE;country==DE", "compare": "year"},
    ],
    "breakdown": [
        {"property": "source"},
        {"property": "country", "metrics": "visitors,bounce_rate"},
        {"property": "page"},
        {"property": "goal"},
        {"property": "event:props:plan"},
        {"property": "exit_page"},
        {"property": "source", "filters": "country==DE"},
        {"property": "page", "filters": "source!=Google"},
        {"property": "goal", "filters": "source==Google"},
    ],
    "pages": [{}, {"filters": "source==Google"}],
    "retention": [{}, {"unit": "week"}, {"filters": "source==Google"}],
    "funnel": [{"funnel": "Tour"}, {"funnel": "Tour", "filters": "country==DE"}],
    "realtime": [{}],
}


def documented(spec, path: str) -> jsonschema.Draft202012Validator:
    schema = spec["paths"][f"/api/v1/stats/{path}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    return jsonschema.Draft202012Validator({**schema, "components": spec["components"]})


@pytest.mark.parametrize("path", ASKED)
def test_read_answers_have_exactly_the_documented_keys(world, client, path):  # noqa: F811 (the fixture)
    key, _, days = world
    site = Site.objects.get(domain="example.com")
    Funnel.objects.create(site=site, name="Tour", steps="/\n/pricing")
    spec = client.get("/api/v1/openapi.json").json()
    validator = documented(spec, path)
    span = {"from": days[0].isoformat(), "to": days[-1].isoformat()}
    for params in ASKED[path]:
        asked = params if "period" in params else {**span, **params}
        response = get(client, key, path, **asked)
        assert response.status_code == 200, (params, response.content)
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(response.json())]
        assert not errors, (params, errors[:5])


# The document's parameters are the code's: each declared parameter (analytics/api/params.py)
# is read by its endpoint with the bounds and choices the document states.
def _documented(document, path, name):
    return next(p for p in document["paths"][path]["get"]["parameters"] if p["name"] == name)


@pytest.mark.parametrize(
    "path,name,extra",
    [
        ("breakdown", "limit", {"property": "source"}),
        ("breakdown", "page", {"property": "source"}),
        ("pages", "limit", {}),
        ("retention", "unit", {}),
        ("retention", "periods", {}),
        ("timeseries", "interval", {"period": "day"}),  # (hours: at most 2 days)
        ("timeseries", "compare", {}),
        ("aggregate", "compare", {}),
    ],
)
def test_each_declared_parameter_is_read_as_documented(world, client, path, name, extra):  # noqa: F811
    key, _, _ = world
    schema = _documented(client.get("/api/v1/openapi.json").json(), f"/api/v1/stats/{path}", name)["schema"]
    if "enum" in schema:
        for value in schema["enum"]:
            assert get(client, key, path, **{name: value}, **extra).status_code == 200, value
        wrong = get(client, key, path, **{name: "nonsense"}, **extra)
        assert (
            wrong.status_code == 400 and wrong.json()["error"] == f"{name}: must be one of {', '.join(schema['enum'])}"
        )
    else:
        low, high = schema["minimum"], schema["maximum"]
        assert get(client, key, path, **{name: high}, **extra).status_code == 200
        past = get(client, key, path, **{name: high + 1}, **extra)
        assert past.status_code == 400 and past.json()["error"] == f"{name}: must be between {low} and {high}"


def test_the_documents_limits_are_the_settings_and_constants(client, settings):
    from django.conf import settings as live

    from analytics.queries import segments

    document = client.get("/api/v1/openapi.json").json()
    batch = document["paths"]["/api/v1/events"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert live.MAX_BATCH_EVENTS in {batch.get("maxItems"), *(s.get("maxItems") for s in batch.get("oneOf", []))}
    filters = _documented(document, "/api/v1/stats/aggregate", "filters")
    assert f"at most {segments.MAX_FILTERS})" in filters["description"]
