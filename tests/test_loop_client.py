"""The event loop's lean Redis client (analytics/store/loop_client.py), on a real server:
replies in order, AUTH and SELECT from the URL, TCP and Unix sockets, redis-py's
exception classes, and a connection that recovers from a frozen or killed server."""

import pytest
import redis

from analytics.store.loop_client import LoopClient
from tests.front_client import run_loop as run
from tests.redis_server import RedisServer

pytestmark = pytest.mark.single_server


@pytest.fixture
def server(tmp_path):
    with RedisServer("--unixsocket", str(tmp_path / "redis.sock")) as server:
        server.socket = tmp_path / "redis.sock"
        yield server


def test_it_answers_pipelined_commands_in_order_with_the_url_password_and_database(server):
    redis.Redis(port=server.port).config_set("requirepass", "s3cret")
    for url in (f"redis://:s3cret@127.0.0.1:{server.port}/3", f"unix://:s3cret@{server.socket}?db=3"):
        client = LoopClient.for_url(url, timeout=5)

        async def go(client=client):
            return await client.execute(
                ("DEL", "k"), ("SET", "k", b"v\x00"), ("GET", "k"), ("INCR", "k"), ("RPUSH", "l", 1, 2.5)
            )

        deleted, ok, value, error, length = run(go)
        assert (ok, value) == (b"OK", b"v\x00")
        assert isinstance(error, redis.exceptions.ResponseError) and "not an integer" in str(error)
        assert length >= 2
    assert redis.Redis(port=server.port, password="s3cret", db=3).get("k") == b"v\x00"


def test_a_wrong_password_is_an_authentication_error(server):
    redis.Redis(port=server.port).config_set("requirepass", "s3cret")
    client = LoopClient.for_url(f"redis://:wrong@127.0.0.1:{server.port}/0", timeout=5)
    with pytest.raises(redis.exceptions.AuthenticationError):
        run(lambda: client.execute(("PING",)))


def test_an_unknown_script_is_redis_pys_noscript_error(server):
    client = LoopClient.for_url(server.url, timeout=5)
    [answer] = run(lambda: client.execute(("EVALSHA", "0" * 40, 0)))
    assert isinstance(answer, redis.exceptions.NoScriptError)


def test_a_frozen_server_times_out_and_the_next_command_gets_its_own_reply(server):
    client = LoopClient.for_url(server.url, timeout=0.3)

    async def go():
        assert await client.execute(("SET", "n", 1)) == [b"OK"]
        server.freeze()
        try:
            with pytest.raises(redis.exceptions.TimeoutError):
                await client.execute(("INCR", "n"))  # (applied once the server thaws; its reply comes too late)
        finally:
            server.thaw()
        return await client.execute(("GET", "n"), ("ECHO", "mine"))

    assert run(go) == [b"2", b"mine"]  # a new connection: not the late INCR's reply


def test_a_killed_server_is_a_connection_error_and_a_restarted_one_is_used_again(server):
    client = LoopClient.for_url(server.url, timeout=2)

    async def go():
        assert await client.execute(("PING",)) == [b"PONG"]
        server.kill()
        with pytest.raises(redis.exceptions.ConnectionError):
            await client.execute(("PING",))
        server.start()
        return await client.execute(("PING",))

    assert run(go) == [b"PONG"]


def test_it_serves_only_plain_and_unix_urls():
    assert LoopClient.for_url("rediss://example.com:6380/0", timeout=1) is None
    assert LoopClient.for_url("redis://127.0.0.1:6379/0", timeout=1) is not None


def test_a_command_it_cannot_send_leaves_the_connection_in_step(server):
    client = LoopClient.for_url(server.url, timeout=5)

    async def go():
        with pytest.raises(TypeError):
            await client.execute(("SET", "k", None))  # (hiredis packs no None: nothing is sent)
        return await client.execute(("ECHO", "mine"))

    assert run(go) == [b"mine"]
