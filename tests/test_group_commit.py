"""Group commit (analytics/ingest/group_commit.py): concurrent single events share one
Redis call, and none is lost, counted twice, or answered before it is written."""
import asyncio
import json
import os
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from redis.cluster import RedisCluster

from analytics.api.ingest import single_event
from analytics.ingest import spool
from analytics.ingest.group_commit import SPOOLED, WRITTEN, Entry, GroupCommit
from analytics.sites import SiteInfo
from analytics.store import connection, keys
from analytics.store.limits import Limited
from analytics.store.scripts import RECORD_BATCH
from tests.faults import ReplyDroppingProxy
from tests.front_client import run_loop
from tests.redis_server import free_port

BASE = Path(__file__).resolve().parent.parent
CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"


def body(path: str) -> bytes:
    return json.dumps({"name": "pageview", "url": f"https://example.com{path}", "domain": "example.com"}).encode()


def entries(n: int, ip=lambda i: f"198.51.100.{i % 250 + 1}", visitor=lambda i: i):
    """n checked events as the front makes them: page /p/<i>, one visitor each."""
    made = []
    for i in range(n):
        accepted = single_event(body(f"/p/{i}"), f"{CHROME} v{visitor(i)}", ip(i))
        made += [Entry(*target) for target in accepted.targets]
    return made


def submit_all(commit: GroupCommit, batch: list[Entry]) -> list:
    async def run():
        return await asyncio.gather(*(commit.submit(entry) for entry in batch), return_exceptions=True)

    return run_loop(run)


def pageviews(r, site, path=None) -> int:
    day = SiteInfo.from_model(site).today()
    key = keys.page_pageviews(site.pk, day, path) if path else keys.pageviews(site.pk, day)
    return int(r.get(key) or 0)


def servers(r) -> list:
    """The plain client of each server that holds data (one, or each master of a cluster)."""
    if isinstance(r, RedisCluster):
        return [r.get_redis_connection(node) for node in r.get_primaries()]
    return [r]


def reset_script_calls(r):
    r.script_load(RECORD_BATCH.source)
    for server in servers(r):
        server.config_resetstat()


def script_calls(r) -> int:
    return sum(server.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0) for server in servers(r))


def test_events_submitted_together_are_one_write_and_all_counted(site, r):
    commit = GroupCommit()
    batch = entries(50)
    reset_script_calls(r)
    assert submit_all(commit, batch) == [WRITTEN] * 50
    assert commit.groups_written == 1
    assert script_calls(r) == 1
    assert pageviews(r, site) == 50
    assert all(pageviews(r, site, f"/p/{i}") == 1 for i in range(50))


def test_a_group_past_its_size_is_written_in_several(site, r):
    commit = GroupCommit(max_group=20)
    assert submit_all(commit, entries(50)) == [WRITTEN] * 50
    assert commit.groups_written == 3
    assert pageviews(r, site) == 50


@pytest.mark.single_server
def test_a_group_whose_replies_are_lost_is_spooled_whole_and_counted_once(site, r, redis_server, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    batch = entries(40)
    proxy = ReplyDroppingProxy(redis_server.port)
    try:
        settings.REDIS_URL, settings.REDIS_SOCKET_TIMEOUT = proxy.url, 0.3
        connection.reset()
        commit = GroupCommit()
        assert submit_all(commit, batch[:1]) == [WRITTEN]  # (the script is loaded)
        proxy.replies_lost = True  # Redis applies the next group, its answer never comes
        assert submit_all(commit, batch[1:]) == [SPOOLED] * 39  # every event acknowledged, on disk
        assert pageviews(r, site) == 40
    finally:
        proxy.close()
    settings.REDIS_URL = redis_server.url
    connection.reset()
    assert spool.replay(connection.get_redis()) == 39
    assert pageviews(r, site) == 40  # the replay found the group's mark: nothing twice
    assert all(pageviews(r, site, f"/p/{i}") == 1 for i in range(40))


@pytest.mark.single_server
def test_a_group_redis_refuses_is_spooled_and_replayed(site, r, redis_server, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    batch = entries(30)
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    connection.reset()
    assert submit_all(GroupCommit(), batch) == [SPOOLED] * 30
    settings.REDIS_URL = redis_server.url
    connection.reset()
    assert pageviews(r, site) == 0
    assert spool.replay(connection.get_redis()) == 30
    assert pageviews(r, site) == 30


def test_rate_limits_stay_per_event_inside_a_group(site, r, settings):
    settings.RATE_LIMIT_PER_IP, settings.RATE_LIMIT_PER_IP_BURST = 60, 3
    noisy = entries(6, ip=lambda i: "203.0.113.9", visitor=lambda i: i)
    quiet = entries(4, ip=lambda i: f"198.51.100.{i + 1}", visitor=lambda i: 100 + i)
    outcomes = submit_all(GroupCommit(), noisy + quiet)
    limited = [o for o in outcomes[:6] if isinstance(o, Limited)]
    assert outcomes[:3] == [WRITTEN] * 3 and len(limited) == 3  # the burst, then refused one by one
    assert outcomes[6:] == [WRITTEN] * 4  # other clients in the same group are not held back
    assert pageviews(r, site) == 7


@pytest.fixture
def front_server(transactional_db, redis_server, tmp_path):
    """`make run`'s web server (granian + config.buffered), one worker, on the test Redis."""
    port = free_port()
    env = dict(
        os.environ,
        REDIS_URL=redis_server.url,
        REDIS_CLUSTER_URL=django_settings.REDIS_CLUSTER_URL,  # (the data's cluster, when the suite runs on one)
        DATABASE_URL=f"sqlite:///{django_settings.DATABASES['default']['NAME']}",
        TALLY_VAR_DIR=str(tmp_path),
        ALLOWED_HOSTS="127.0.0.1",
        TRUSTED_PROXIES="127.0.0.1",
    )
    env.pop("DJANGO_SETTINGS_MODULE", None)
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "granian"), "--interface", "asgi", "--host", "127.0.0.1", "--port",
         str(port), "--workers", "1", "--log-level", "warning", "--no-ws", "config.buffered:application"],
        cwd=BASE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
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


@pytest.mark.slow
def test_concurrent_requests_are_grouped_and_each_answered_after_its_write(site, r, front_server):
    n, clients = 240, 24
    reset_script_calls(r)
    seen_at_answer, statuses = {}, []

    def client(k):
        for i in range(k, n, clients):
            request = urllib.request.Request(
                front_server + "/api/event", data=body(f"/p/{i}"), method="POST",
                headers={"Content-Type": "text/plain", "User-Agent": CHROME, "X-Forwarded-For": f"10.0.{i // 250}.{i % 250 + 1}"},
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                statuses.append(response.status)
            seen_at_answer[i] = pageviews(r, site, f"/p/{i}")  # read the moment the answer came

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [202] * n
    assert seen_at_answer == {i: 1 for i in range(n)}  # each was written before its 202
    assert pageviews(r, site) == n
    assert script_calls(r) < n  # requests that arrived together shared a call
