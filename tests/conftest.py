"""Fixtures: a real redis-server per test session, flushed before every test."""
import pytest
from django.conf import settings

from analytics import sites
from analytics.store import connection
from tests.redis_server import RedisServer


@pytest.fixture(scope="session", autouse=True)
def collected_static():
    """The static files as production serves them (hashed names, gzip copies): templates
    name them through the manifest that collectstatic writes."""
    from django.core.management import call_command

    call_command("collectstatic", "--noinput", verbosity=0)


@pytest.fixture(scope="session")
def redis_server():
    with RedisServer() as server:
        yield server


@pytest.fixture(autouse=True)
def eager_celery(redis_server):
    """Tasks queued by the code under test run in the test, synchronously (the test of a
    real worker turns this off); any broker connection goes to the test's Redis."""
    from config.celery import app

    app.conf.broker_url = redis_server.url
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield app
    app.conf.task_always_eager = False


@pytest.fixture(autouse=True)
def r(redis_server):
    """The test's Redis client: the same one the code under test gets from get_redis()."""
    settings.REDIS_URL = redis_server.url
    connection.reset()
    client = connection.get_redis()
    client.flushall()
    sites.clear_cache()
    yield client
    connection.reset()


@pytest.fixture
def make_site(db):
    """Make a site; returns (Site, its clear-text API key)."""
    from analytics.models import Site

    def make(domain="example.com", timezone="UTC", identity_mode="stable"):
        site = Site.objects.create(domain=domain, timezone=timezone, identity_mode=identity_mode)
        return site, site.create_api_key("test")

    return make


@pytest.fixture
def site(make_site):
    return make_site()[0]
