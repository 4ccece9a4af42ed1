"""The event front (analytics/api/event_front.py) gives the Django view's answers.

Every test of tests/test_api_event.py runs again here, with `client` replaced by one that
goes through the ASGI app `make run` serves, where `/api/event` is answered by the front
and its group commit instead of by Django."""

import pytest

from tests.front_client import FrontClient
from tests.test_api_event import *  # noqa: F401,F403  (the same tests, collected again here)


@pytest.fixture
def client(transactional_db):
    return FrontClient()


def test_the_front_stops_reading_at_one_events_limit_and_answers_with_cors(client, site):
    from django.conf import settings

    response = client.post(
        "/api/event",
        data=b"x" * (settings.MAX_EVENT_BODY + 1),
        content_type="text/plain",
        HTTP_USER_AGENT="Mozilla/5.0 Firefox/128.0",
    )
    assert response.status_code == 413
    assert response.json() == {"error": f"body too large: more than {settings.MAX_EVENT_BODY} bytes"}
    assert response["Access-Control-Allow-Origin"] == "*"  # (a browser can read why)
