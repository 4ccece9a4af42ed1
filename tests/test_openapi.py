"""The OpenAPI document is valid and covers every API route."""
from django.urls import get_resolver
from openapi_spec_validator import validate


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
