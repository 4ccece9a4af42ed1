"""A transaction torn by a crash at the end of the AOF is cut off before the server loads
it (server/aof_repair.py): on Redis 8.2 (and 6.2) the server's own loader keeps the torn
block's complete commands and runs them with the next transaction after the next restart.
On a real server of the matrix; the second restart is the one that went wrong."""

from pathlib import Path

import pytest
import redis

from server import aof_repair
from tests.redis_server import RedisServer

TWO_WRITES = "redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[1]); return 1"


def command(*parts: bytes) -> bytes:
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


TORN = command(b"MULTI") + command(b"SET", b"torn", b"1") + b"*3\r\n$3\r\nSET\r\n$4\r\ntorn"


@pytest.mark.single_server
def test_a_torn_transaction_never_applies_after_restarts():
    server = RedisServer(appendonly=True)
    try:
        client = redis.Redis.from_url(server.url)
        assert client.eval(TWO_WRITES, 2, "a", "b", "first") == 1  # (a MULTI/EXEC block in the AOF)
        server.kill()
        path = aof_repair.append_file(Path(server.dir))
        with open(path, "ab") as file:
            file.write(TORN)  # what a kill -9 in the middle of writing the next block leaves

        server.start()  # (cuts the torn block first, as `make run` does)
        client = redis.Redis.from_url(server.url)
        assert client.get("torn") is None and client.get("a") == b"first"
        assert client.eval(TWO_WRITES, 2, "c", "d", "second") == 1
        server.kill()
        server.start()
        client = redis.Redis.from_url(server.url)
        assert client.get("torn") is None  # (on Redis 8.2 without the cut: b"1")
        assert [client.get(k) for k in ("a", "b", "c", "d")] == [b"first", b"first", b"second", b"second"]
    finally:
        server.stop()


def test_repair_cuts_only_an_open_transaction(tmp_path):
    closed = command(b"SET", b"k", b"v") + command(b"MULTI") + command(b"INCR", b"n") + command(b"EXEC")
    path = tmp_path / "appendonly.aof"
    path.write_bytes(closed)
    assert aof_repair.repair(path) == 0 and path.read_bytes() == closed

    for tail in (
        command(b"MULTI") + command(b"INCR", b"n"),
        TORN,
        command(b"MULTI"),
    ):  # (a torn MULTI itself: the server cuts it)
        path.write_bytes(closed + tail)
        assert aof_repair.repair(path) == len(tail)
        assert path.read_bytes() == closed


def test_repair_is_not_fooled_by_a_value_that_looks_like_multi(tmp_path):
    """The bytes of a MULTI inside a stored value are not a transaction: the real one
    before them is what counts."""
    path = tmp_path / "appendonly.aof"
    value = command(b"MULTI") + b"not a command"
    inside = command(b"MULTI") + command(b"SET", b"k", value) + command(b"EXEC")
    path.write_bytes(inside)
    assert aof_repair.repair(path) == 0
    torn = command(b"MULTI") + command(b"SET", b"k", value)
    path.write_bytes(torn)
    assert aof_repair.repair(path) == len(torn) and path.read_bytes() == b""


def test_append_file_follows_the_manifest(tmp_path):
    assert aof_repair.append_file(tmp_path) is None
    (tmp_path / "appendonly.aof").write_bytes(b"")
    assert aof_repair.append_file(tmp_path) == tmp_path / "appendonly.aof"
    folder = tmp_path / "appendonlydir"
    folder.mkdir()
    (folder / "appendonly.aof.manifest").write_text(
        "file appendonly.aof.3.base.rdb seq 3 type b\n"
        "file appendonly.aof.3.incr.aof seq 3 type i\n"
        "file appendonly.aof.4.incr.aof seq 4 type i startoffset 10\n"
    )
    assert aof_repair.append_file(tmp_path) == folder / "appendonly.aof.4.incr.aof"
