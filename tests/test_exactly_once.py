"""An acknowledged event is counted exactly once: retries, timeouts and spool replays.

Two real faults: Redis frozen with `CLIENT PAUSE` against a client whose socket timeout
is shorter than the pause, and a proxy that lets commands through but loses the replies
(the client gives up on a call that Redis applied: the case that used to count twice).
"""

import fcntl
import json
import os
import time
from datetime import UTC, datetime

import pytest

from analytics import queries
from analytics.capture import spool
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.ingest.record import Mark, new_mark
from analytics.sites import SiteInfo
from analytics.store import connection, keys
from team.roles import add_member
from tests.faults import ReplyDroppingProxy


def hits(n, prefix="v", path="/p"):
    return [Hit(None, path, "pageview", identity_source(None, f"{prefix}{i}", None, None)) for i in range(n)]


def today(r, site):
    info = SiteInfo.from_model(site)
    return queries.timeseries(r, info, info.today(), info.today(), ("pageviews", "dau"))[0]


def batch(client, key, events, **headers):
    return client.post(
        "/api/v1/events",
        data=json.dumps(events),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
        **headers,
    )


def freeze(r, seconds):
    """Pause every client of the server for `seconds` (their commands wait, then run)."""
    r.execute_command("CLIENT", "PAUSE", int(seconds * 1000), "ALL")


def short_timeout(settings, seconds=0.3):
    settings.REDIS_SOCKET_TIMEOUT = seconds
    connection.reset()


def test_a_marked_call_counts_once(site, r):
    info = SiteInfo.from_model(site)
    mark = new_mark(info, datetime.now(UTC))
    events = hits(30) + [Hit(None, "/", "pageview", b"bot", bot=True)]
    first = record(r, info, events, mark=mark)
    again = record(r, info, events, mark=mark)
    assert (first, first.repeated) == ((30, 1), False)
    assert again.repeated
    assert (today(r, site)["pageviews"], today(r, site)["dau"]) == (30, 30)
    assert int(r.hget(keys.dropped(site.pk, info.today()), "user-agent")) == 1  # bots once too
    assert 0 < r.ttl(mark.key) <= 48 * 3600


@pytest.mark.single_server
def test_a_timed_out_batch_that_redis_applied_is_not_counted_again(client, site, settings, tmp_path, r, redis_server):
    settings.VAR_DIR = tmp_path
    site.pattern_pageviews = 0  # (else the screening call's reply is the one lost: see patterns.py)
    site.save()
    key = site.create_api_key()
    proxy = ReplyDroppingProxy(redis_server.port)
    try:
        settings.REDIS_URL = proxy.url
        short_timeout(settings)
        events = [{"url": "https://example.com/x", "visitor": f"v{n}"} for n in range(1000)]
        assert batch(client, key, events).status_code == 200  # (the script is loaded)
        proxy.replies_lost = True
        response = batch(client, key, events[:500])
        assert response.status_code == 200 and response["X-Tally-Spooled"] == "500"  # acknowledged, on disk
        assert today(r, site)["pageviews"] == 1500  # ... and Redis applied it all the same
    finally:
        proxy.close()
    settings.REDIS_URL = redis_server.url
    connection.reset()
    assert spool.replay(connection.get_redis()) == 500
    assert (today(r, site)["pageviews"], today(r, site)["dau"]) == (1500, 1000)
    assert list((tmp_path / "spool").iterdir()) == []


def test_an_idempotency_key_makes_a_client_retry_harmless(client, site, r):
    key = site.create_api_key()
    events = [{"url": "https://example.com/y", "visitor": f"v{n}"} for n in range(50)]
    first = batch(client, key, events, HTTP_IDEMPOTENCY_KEY="order-17")
    again = batch(client, key, events, HTTP_IDEMPOTENCY_KEY="order-17")
    other = batch(client, key, events[:10], HTTP_IDEMPOTENCY_KEY="order-18")
    assert first.json()["accepted"] == again.json()["accepted"] == 50
    assert "Idempotent-Replayed" not in first and again["Idempotent-Replayed"] == "true"
    assert other.json()["accepted"] == 10 and "Idempotent-Replayed" not in other
    assert today(r, site)["pageviews"] == 60
    assert batch(client, key, events, HTTP_IDEMPOTENCY_KEY="k" * 256).status_code == 400


def test_an_idempotency_key_sent_again_with_another_body_is_refused(client, site, r):
    """Not a retry: answering it as a replay would report events that were never counted."""
    key = site.create_api_key()
    events = [{"url": "https://example.com/y", "visitor": f"v{n}"} for n in range(5)]
    assert batch(client, key, events, HTTP_IDEMPOTENCY_KEY="order-17").status_code == 200
    other = batch(client, key, events[:3], HTTP_IDEMPOTENCY_KEY="order-17")
    assert other.status_code == 422 and "Idempotency-Key" in other.json()["error"]
    again = batch(client, key, events, HTTP_IDEMPOTENCY_KEY="order-17")
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert today(r, site)["pageviews"] == 5


@pytest.mark.single_server
def test_a_replay_that_times_out_is_picked_up_again(site, settings, tmp_path, r):
    settings.VAR_DIR = tmp_path
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    for n in range(5):  # five calls spooled while Redis was away
        spool.write(info, hits(200, prefix=f"c{n}-"), received=now, mark=new_mark(info, now))
    short_timeout(settings)
    freeze(r, 1.5)
    assert spool.replay(connection.get_redis()) == 0  # Redis froze: the replay gave up
    assert [p.suffix for p in (tmp_path / "spool").iterdir()] == [".replaying"]
    time.sleep(1.7)  # (and the call it gave up on ran when the pause ended)
    assert spool.replay(connection.get_redis()) == 1000
    assert today(r, site)["pageviews"] == 1000 and today(r, site)["dau"] == 1000
    assert list((tmp_path / "spool").iterdir()) == []


def test_a_crashed_replayers_file_is_replayed_and_a_live_ones_is_left_alone(site, settings, tmp_path, r):
    settings.VAR_DIR = tmp_path
    info = SiteInfo.from_model(site)
    spool.write(info, hits(7), mark=new_mark(info, datetime.now(UTC)))
    [written] = (tmp_path / "spool").iterdir()
    claimed = written.with_name("host-1.abcd.replaying")
    written.rename(claimed)  # claimed by a replayer that then died (no lock held)

    held = os.open(claimed, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # ... or one still at work
    try:
        assert spool.replay(r) == 0
    finally:
        os.close(held)
    assert spool.replay(r) == 7
    assert today(r, site)["pageviews"] == 7


def test_a_write_racing_a_claim_lands_in_a_new_file(site, settings, tmp_path, r):
    settings.VAR_DIR = tmp_path
    info = SiteInfo.from_model(site)
    spool.write(info, hits(3, prefix="a"), mark=new_mark(info, datetime.now(UTC)))
    [path] = (tmp_path / "spool").iterdir()
    path.rename(path.with_name("taken.replaying"))  # claimed after our open, before our lock
    spool.write(info, hits(4, prefix="b"), mark=new_mark(info, datetime.now(UTC)))
    assert sorted(p.suffix for p in (tmp_path / "spool").iterdir()) == [".ndjson", ".replaying"]
    assert spool.replay(r) == 7


@pytest.mark.single_server
def test_the_read_api_answers_503_json_when_redis_times_out(client, site, settings, r):
    key = site.create_api_key()
    short_timeout(settings, 0.2)
    freeze(r, 1.0)
    response = client.get("/api/v1/stats/timeseries", {"site": "example.com"}, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 503
    assert response.json() == {"error": "storage is unavailable; retry later"} and response["Retry-After"]
    time.sleep(1.1)


def test_old_spool_lines_without_a_mark_still_replay(site, settings, tmp_path, r):
    settings.VAR_DIR = tmp_path
    info = SiteInfo.from_model(site)
    spool.write(info, hits(2))  # (the format before marks)
    assert spool.replay(r) == 2 and today(r, site)["pageviews"] == 2


def test_the_mark_is_per_call_chunk(site, r):
    """A batch of several chunks marks each: a replay after a partial apply counts only
    the chunks that were missing."""
    info = SiteInfo.from_model(site)
    mark = Mark(keys.applied(site.pk, info.today()), "partial", 3600)
    events = hits(2500)  # three chunks of at most 1,000 visitors
    r.sadd(mark.key, mark.chunk(0), mark.chunk(1))  # the first two were applied before
    record(r, info, events, mark=mark)
    assert today(r, site)["dau"] == 500


@pytest.mark.single_server
def test_pages_answer_a_503_page_and_login_still_works_when_redis_is_frozen(
    client, site, settings, r, django_user_model
):
    """A frozen Redis made the dashboard and its share page answer 500: they answer a 503
    page with Retry-After within the socket timeout; the login page checks the password
    in the database, its rate-limit buckets out of reach."""
    owner = django_user_model.objects.create_user("owner", password="right-password-1")
    add_member(site, owner, "owner")
    token = site.enable_sharing()
    short_timeout(settings, 0.2)
    freeze(r, 2.0)
    shared = client.get(f"/share/{token}/")
    assert shared.status_code == 503 and shared["Retry-After"] and b"unavailable" in shared.content
    login = client.post("/accounts/login/", {"username": "owner", "password": "right-password-1"})
    assert login.status_code == 302
    page = client.get("/dashboard/example.com/")
    assert page.status_code == 503
    time.sleep(2.1)


@pytest.mark.single_server
def test_a_full_server_spools_the_batch_and_counts_it_once_room_is_back(client, site, settings, tmp_path, r):
    """At its maxmemory (noeviction) the server refuses the ingest script before its first
    write: the batch is kept in the spool (acknowledged), not a 500, and counted once when
    the replay finds room."""
    settings.VAR_DIR = tmp_path
    key = site.create_api_key()
    events = [{"url": "https://example.com/full", "visitor": f"v{n}"} for n in range(20)]
    assert batch(client, key, events[:1]).status_code == 200  # (the script is loaded)
    r.config_set("maxmemory-policy", "noeviction")
    r.config_set("maxmemory", r.info("memory")["used_memory"] - 1024)
    try:
        response = batch(client, key, events)
        assert response.status_code == 200 and response["X-Tally-Spooled"] == "20", response.content
    finally:
        r.config_set("maxmemory", 0)
    assert spool.replay(r) == 20
    assert today(r, site)["pageviews"] == 21
