"""Group commit (analytics/capture/group_commit.py) and the inbox (capture/inbox.py):
concurrent single events share one Redis call, none is answered before it is in Redis,
and none is lost or counted twice, whatever fails in between."""

import asyncio
import io
import json
import os
import threading
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from analytics.api.ingest import single_event
from analytics.capture import inbox, spool
from analytics.capture.group_commit import SPOOLED, WRITTEN, Entry, GroupCommit
from analytics.sites import SiteInfo
from analytics.store import connection, keys
from analytics.store.limits import Limited
from analytics.store.scripts import INBOX_CLAIM, INBOX_PUSH, RECORD_BATCH
from tests.faults import ReplyDroppingProxy
from tests.front_client import run_loop
from tests.redis_server import RedisServer

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


def flush(r, site):
    return inbox.flush(r, SiteInfo.from_model(site))


def idle_commit(**kwargs) -> GroupCommit:
    """A GroupCommit whose drainer waits a minute: what it pushed stays in the inbox
    until the test drains it."""
    commit = GroupCommit(**kwargs)
    commit.drainer = inbox.Drainer(delay=60)
    return commit


def pageviews(r, site, path=None) -> int:
    """Counted today or yesterday (a test that runs across midnight sent some events yesterday)."""
    today = SiteInfo.from_model(site).today()
    days = (today, today - timedelta(days=1))
    return sum(
        int(r.get(keys.page_pageviews(site.pk, d, path) if path else keys.pageviews(site.pk, d)) or 0) for d in days
    )


def servers(r) -> list:
    """The plain client of each server that holds data (one, or each master of a cluster)."""
    if isinstance(r, RedisCluster):
        return [r.get_redis_connection(node) for node in r.get_primaries()]
    return [r]


def reset_script_calls(r):
    for script in (RECORD_BATCH, INBOX_PUSH):
        r.script_load(script.source)
    for server in servers(r):
        server.config_resetstat()


def script_calls(r) -> int:
    return sum(server.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0) for server in servers(r))


@pytest.fixture(params=["loop", "thread"])
def in_loop(request) -> bool:
    """Pushes sent from the event loop (store/loop_client.py), or from group commit's thread
    with redis-py (on a cluster, and as before): the same outcomes either way."""
    return request.param == "loop"


def test_events_submitted_together_are_one_push_and_all_counted_by_the_drain(site, r, in_loop):
    commit = idle_commit(in_loop=in_loop)
    batch = entries(50)
    reset_script_calls(r)
    assert submit_all(commit, batch) == [WRITTEN] * 50
    assert commit.groups_written == 1
    assert script_calls(r) == 1  # one push for the group
    assert commit.sends_from_loop == (in_loop and not isinstance(r, RedisCluster))
    assert r.llen(keys.inbox(site.pk)) == 50  # acknowledged: in Redis, not counted yet
    assert pageviews(r, site) == 0
    assert flush(r, site) == 50
    assert r.llen(keys.inbox(site.pk)) == 0
    assert pageviews(r, site) == 50
    assert all(pageviews(r, site, f"/p/{i}") == 1 for i in range(50))


def test_a_push_after_the_servers_scripts_were_flushed_loads_it_and_counts_once(site, r, in_loop):
    for server in servers(r):
        server.script_flush()
    commit = idle_commit(in_loop=in_loop)
    assert submit_all(commit, entries(20)) == [WRITTEN] * 20
    assert r.llen(keys.inbox(site.pk)) == 20  # (the NOSCRIPT call was run again, once)
    flush(r, site)
    assert pageviews(r, site) == 20


def test_the_drainer_counts_what_was_pushed_without_being_asked(site, r):
    assert submit_all(GroupCommit(), entries(30)) == [WRITTEN] * 30
    for _ in range(500):
        if pageviews(r, site) == 30:
            break
        threading.Event().wait(0.01)
    assert pageviews(r, site) == 30 and r.llen(keys.inbox(site.pk)) == 0


def test_without_the_inbox_a_group_is_counted_before_its_answer(site, r, settings):
    settings.INGEST_INBOX = False
    commit = GroupCommit()
    reset_script_calls(r)
    assert submit_all(commit, entries(50)) == [WRITTEN] * 50
    assert script_calls(r) == 2  # (the rate screen, ingest/patterns.py; then one count for the group)
    assert pageviews(r, site) == 50


def test_a_group_past_its_size_is_written_in_several(site, r):
    commit = idle_commit(max_group=20)
    assert submit_all(commit, entries(50)) == [WRITTEN] * 50
    assert commit.groups_written == 3
    flush(r, site)
    assert pageviews(r, site) == 50


def test_a_drainer_that_dies_mid_batch_leaves_its_claim_to_the_next_counted_once(site, r, monkeypatch):
    info = SiteInfo.from_model(site)
    assert submit_all(idle_commit(), entries(40)) == [WRITTEN] * 40
    recorded = inbox.record

    def record_then_die(*args, **kwargs):  # the batch is counted, then the drainer dies before its release
        recorded(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(inbox, "record", record_then_die)
    monkeypatch.setattr(inbox, "_give_up", lambda *args: None)  # (killed: it cannot give its claim up)
    with pytest.raises(KeyboardInterrupt):
        inbox.drain(r, info)
    monkeypatch.undo()
    assert pageviews(r, site) == 40
    assert inbox.drain(r, info) == 0  # its lease runs: the claim is not taken yet
    claim = keys.inbox_claim(site.pk)[0]
    r.hset(claim, "until", 0)  # (the lease runs out)
    assert inbox.drain(r, info) == 40  # taken over whole...
    assert pageviews(r, site) == 40  # ...and its marks count nothing twice
    assert all(pageviews(r, site, f"/p/{i}") == 1 for i in range(40))
    assert not r.exists(claim, keys.inbox_claim(site.pk)[1]) and r.llen(keys.inbox(site.pk)) == 0


def test_a_drain_that_fails_gives_its_claim_up_and_the_next_counts_it(site, r, monkeypatch):
    info = SiteInfo.from_model(site)
    assert submit_all(idle_commit(), entries(10)) == [WRITTEN] * 10

    def refused(*args, **kwargs):
        raise redis.exceptions.ConnectionError("Redis went away")

    monkeypatch.setattr(inbox, "record", refused)
    with pytest.raises(redis.exceptions.ConnectionError):
        inbox.drain(r, info)
    monkeypatch.undo()
    assert inbox.drain(r, info) == 10  # no lease to wait for
    assert pageviews(r, site) == 10


@pytest.mark.single_server
def test_a_claim_left_by_an_outage_is_taken_over_at_once_when_redis_is_back(
    site, r, redis_server, settings, monkeypatch
):
    """Redis goes away mid-batch (or is killed, and comes back from its AOF with the claim
    in it): the drainer could not give its claim up. Its next drain must not wait out the
    lease (CI saw a read miss two events right after a restart)."""
    info = SiteInfo.from_model(site)
    assert submit_all(idle_commit(), entries(10)) == [WRITTEN] * 10
    proxy = ReplyDroppingProxy(redis_server.port)
    recorded = inbox.record

    def record_as_redis_goes_away(*args, **kwargs):
        proxy.replies_lost = True  # (the claim was taken; from here on, no answer comes back)
        recorded(*args, **kwargs)

    try:
        lost = redis.Redis.from_url(proxy.url, socket_timeout=0.3)
        monkeypatch.setattr(inbox, "record", record_as_redis_goes_away)
        with pytest.raises(redis.exceptions.TimeoutError):
            inbox.drain(lost, info)
        monkeypatch.undo()
        assert r.hget(keys.inbox_claim(site.pk)[0], "until") not in (None, b"0")  # the lease still runs...
    finally:
        proxy.close()
    assert inbox.drain(r, info, wait=0) == 10  # ...yet the claim is taken over at once
    assert pageviews(r, site) == 10  # (Redis had applied the batch: its marks count nothing twice)
    assert all(pageviews(r, site, f"/p/{i}") == 1 for i in range(10))


@pytest.mark.single_server
def test_a_claim_taken_before_redis_restarted_is_taken_over_at_once(site):
    """Redis is killed while a drainer counts a claim, and comes back from its AOF with the
    claim in it. Whichever process drains next (a read's flush() in another web worker, say)
    takes it over at once: the holder's hold died with the server's connections."""
    info = SiteInfo.from_model(site)
    with RedisServer("--appendfsync", "always", appendonly=True) as server:
        data = redis.Redis.from_url(server.url)
        inbox.push(data, info, [entry.hit for entry in entries(10)])
        claim, claimed, counter = keys.inbox_claim(site.pk)
        taken = INBOX_CLAIM.run(
            data, [keys.inbox(site.pk), claim, claimed, counter], [int(time.time() * 1000), inbox.LEASE_MS, 250]
        )
        assert len(taken) == 1 + 10  # a drainer took the batch; then, before it counted it:
        server.kill()
        server.start()
        data = redis.Redis.from_url(server.url)
        assert data.hget(claim, "id") == taken[0]  # (the claim came back, its lease still running)
        assert inbox.drain(data, info, wait=0) == 10
        assert pageviews(data, site) == 10 and data.llen(keys.inbox(site.pk)) == 0


def test_pushes_keep_one_mark_per_stream_not_one_per_call(site, r):
    commit = idle_commit()
    for entry in entries(60):
        assert submit_all(commit, [entry]) == [WRITTEN]  # 60 pushes, one after another
    streams = keys.inbox_streams(site.pk)
    assert len(r.hgetall(streams)) == 1 and int(next(iter(r.hvals(streams)))) >= 60
    assert not r.exists(keys.applied(site.pk, SiteInfo.from_model(site).today()))  # (no set member per push)
    flush(r, site)
    assert pageviews(r, site) == 60


def test_with_a_drainer_process_the_web_process_only_pushes(site, r, settings):
    from django.core.management import call_command

    settings.INBOX_DRAINER = "process"  # (make run's web workers)
    commit = GroupCommit()
    assert submit_all(commit, entries(25)) == [WRITTEN] * 25
    threading.Event().wait(3 * inbox.DRAIN_DELAY)
    assert pageviews(r, site) == 0 and r.llen(keys.inbox(site.pk)) == 25  # no thread drained it
    out = io.StringIO()
    call_command("drain_inboxes", "--once", stdout=out)  # (one pass of the process make run starts)
    assert out.getvalue().strip() == "25 events counted"
    assert pageviews(r, site) == 25 and r.llen(keys.inbox(site.pk)) == 0


def test_the_drainer_counts_the_sites_the_pushes_name_and_its_sweep_finds_a_lost_hint(site, r, settings):
    from analytics.management.commands.drain_inboxes import Sites

    settings.INBOX_DRAINER = "process"
    commit = GroupCommit()
    assert submit_all(commit, entries(25)) == [WRITTEN] * 25
    assert r.smembers(keys.inbox_waiting()) == {str(site.pk).encode()}  # (sent in the push's round trip)
    known = Sites()  # (it knows no site yet: a site named is read then)
    assert inbox.drain_hinted(r, known.of) == 25
    assert pageviews(r, site) == 25 and not r.exists(keys.inbox_waiting())
    assert submit_all(commit, entries(5)) == [WRITTEN] * 5
    r.delete(keys.inbox_waiting())  # a hint lost (a crash between a push and its hint)
    assert inbox.drain_hinted(r, known.of) == 0
    assert inbox.drain_waiting(r, known.read_all()) == 5  # the sweep every few seconds finds it
    assert pageviews(r, site) == 30


@pytest.mark.single_server
def test_an_idle_drainer_pass_is_one_command_however_many_sites_there_are(site, r):
    """A pass of the drainer process when nothing waits: one SPOP, no command per site."""
    r.config_resetstat()
    assert inbox.drain_hinted(r, lambda ids: pytest.fail(f"no site waits, yet {ids} were named")) == 0
    calls = {name: stat["calls"] for name, stat in r.info("commandstats").items()}
    assert calls.pop("cmdstat_spop") == 1
    assert set(calls) <= {"cmdstat_config|resetstat", "cmdstat_config"}


def test_a_forked_process_pushes_in_a_stream_of_its_own():
    read, write = os.pipe()
    parent = inbox.STREAM.name
    pid = os.fork()
    if pid == 0:  # (the child: say its stream's name, and leave at once)
        os.write(write, inbox.STREAM.name.encode())
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(write)
    child = os.read(read, 100).decode()
    os.close(read)
    assert child and child != parent and inbox.STREAM.name == parent


def test_the_inbox_keeps_no_ip_address_or_user_agent(site, r):
    assert submit_all(idle_commit(), entries(5, ip=lambda i: "203.0.113.77")) == [WRITTEN] * 5
    kept = b"".join(r.lrange(keys.inbox(site.pk), 0, -1))
    assert b"203.0.113.77" not in kept and b"Mozilla" not in kept  # (its browser, "Chrome 124", is a dimension)
    flush(r, site)
    assert pageviews(r, site) == 5


@pytest.mark.single_server
def test_a_group_whose_replies_are_lost_is_spooled_whole_and_counted_once(
    site, r, redis_server, settings, tmp_path, in_loop
):
    settings.VAR_DIR = tmp_path
    batch = entries(40)
    proxy = ReplyDroppingProxy(redis_server.port)
    try:
        settings.REDIS_URL, settings.REDIS_SOCKET_TIMEOUT = proxy.url, 0.3
        connection.reset()
        commit = GroupCommit(in_loop=in_loop)
        assert submit_all(commit, batch[:1]) == [WRITTEN]  # (the script is loaded)
        proxy.replies_lost = True  # Redis applies the next group, its answer never comes
        assert submit_all(commit, batch[1:]) == [SPOOLED] * 39  # every event acknowledged, on disk
        assert r.llen(keys.inbox(site.pk)) == 40  # (Redis took the push; its answer was lost)
    finally:
        proxy.close()
    settings.REDIS_URL = redis_server.url
    connection.reset()
    assert spool.replay(connection.get_redis()) == 39
    flush(r, site)
    assert pageviews(r, site) == 40  # the replay found the push's mark: nothing twice
    assert all(pageviews(r, site, f"/p/{i}") == 1 for i in range(40))


@pytest.mark.single_server
def test_a_group_redis_refuses_is_spooled_and_replayed(site, r, redis_server, settings, tmp_path, in_loop):
    settings.VAR_DIR = tmp_path
    batch = entries(30)
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    connection.reset()
    assert submit_all(GroupCommit(in_loop=in_loop), batch) == [SPOOLED] * 30
    settings.REDIS_URL = redis_server.url
    connection.reset()
    assert pageviews(r, site) == 0
    assert spool.replay(connection.get_redis()) == 30
    flush(r, site)
    assert pageviews(r, site) == 30


def test_rate_limits_stay_per_event_inside_a_group(site, r, settings, in_loop):
    settings.RATE_LIMIT_PER_IP, settings.RATE_LIMIT_PER_IP_BURST = 60, 3
    noisy = entries(6, ip=lambda i: "203.0.113.9", visitor=lambda i: i)
    quiet = entries(4, ip=lambda i: f"198.51.100.{i + 1}", visitor=lambda i: 100 + i)
    outcomes = submit_all(GroupCommit(in_loop=in_loop), noisy + quiet)
    limited = [o for o in outcomes[:6] if isinstance(o, Limited)]
    assert outcomes[:3] == [WRITTEN] * 3 and len(limited) == 3  # the burst, then refused one by one
    assert outcomes[6:] == [WRITTEN] * 4  # other clients in the same group are not held back
    flush(r, site)
    assert pageviews(r, site) == 7


@pytest.mark.slow
def test_concurrent_requests_are_grouped_and_each_answered_after_its_write(site, r, front_server):
    n, clients = 240, 24
    reset_script_calls(r)
    seen_at_answer, statuses = {}, []

    def client(k):
        for i in range(k, n, clients):
            request = urllib.request.Request(
                front_server + "/api/event",
                data=body(f"/p/{i}"),
                method="POST",
                headers={
                    "Content-Type": "text/plain",
                    "User-Agent": CHROME,
                    "X-Forwarded-For": f"10.0.{i // 250}.{i % 250 + 1}",
                },
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                statuses.append(response.status)
            seen_at_answer[i] = kept_in_redis(r, site, f"/p/{i}")  # read the moment the answer came

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [202] * n
    assert all(seen_at_answer[i] >= 1 for i in range(n))  # each was in Redis before its 202
    # (twice for a moment: counted by a drainer that has not dropped its claim yet)
    flush(r, site)
    assert pageviews(r, site) == n
    assert all(pageviews(r, site, f"/p/{i}") == 1 for i in range(n))
    assert script_calls(r) < 2 * n  # requests that arrived together shared a push (and drains are batches)


KEPT = """
local n = tonumber(redis.call('GET', KEYS[1]) or '0') + tonumber(redis.call('GET', KEYS[4]) or '0')
for _, key in ipairs({KEYS[2], KEYS[3]}) do
  for _, raw in ipairs(redis.call('LRANGE', key, 0, -1)) do
    if string.find(raw, ARGV[1], 1, true) then n = n + 1 end
  end
end
return n
"""


def kept_in_redis(r, site, path) -> int:
    """How many times an event of `path` is in Redis, counted or waiting (the inbox, a
    drainer's claim): read in one atomic step, as the drainer moves it along. Counted
    under today or yesterday: a test that runs across midnight sent some events yesterday."""
    claimed = keys.inbox_claim(site.pk)[1]
    day = SiteInfo.from_model(site).today()
    views = [keys.page_pageviews(site.pk, d, path) for d in (day, day - timedelta(days=1))]
    return r.eval(KEPT, 4, views[0], keys.inbox(site.pk), claimed, views[1], f'"{path}"')
