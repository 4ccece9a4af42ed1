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
