"""A lean Redis client on the event loop, for the one command the event front sends.

Why not redis-py: each single event's group is pushed into its site's inbox with one
EVALSHA (capture/inbox.py). Sent from a thread with redis-py's client, a push cost the web
worker ~120 µs of CPU a group on top of the script (the hand-off to the thread and back,
the GIL, redis-py's command machinery); redis.asyncio measured no cheaper (403 against 407
µs a request, make bench's 8 connections). This client writes the command bytes with
hiredis's packer on an asyncio transport and reads the replies with hiredis's parser in
`data_received`: measured, single events went from 2,428 to 3,145 req/s at 8 connections
(the worker's CPU from 457 to 333 µs a request).

What it does not do, by design: cluster routing, TLS, RESP3, pub/sub, retries. `for_url()`
returns None for a URL it cannot serve (rediss://, any other scheme), and
connection.new_loop_client() None on a cluster: the caller then stays on redis-py. Errors
are redis-py's exception classes, so the callers' `OUTAGE` handling
(store/connection.py) and NOSCRIPT fallback work unchanged. A command that times out
closes the connection (its reply may still come, and would answer the next command), and
the next command connects again.
"""

import asyncio
from collections import deque
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import hiredis
import redis


class LoopClient:
    """Commands pipelined on one connection, answered in order; made for one event loop."""

    def __init__(
        self, connect, password: str | None, username: str | None, db: int, timeout: float, connect_timeout: float = 2.0
    ):
        self._connect = connect  # a coroutine function: (transport, protocol) of a new connection
        self.connect_timeout = min(connect_timeout, timeout)  # (redis-py's socket_connect_timeout here: 2 s)
        self._hello = [("AUTH", *((username,) if username else ()), password)] if password else []
        if db:
            self._hello.append(("SELECT", db))
        self.timeout = timeout
        self._protocol: _Replies | None = None
        self._connecting: asyncio.Future | None = None

    @classmethod
    def for_url(cls, url: str, timeout: float) -> "LoopClient | None":
        """A client of redis:// or unix:// `url`, or None for anything else."""
        parts = urlsplit(url)
        query: dict[str, list[Any]] = parse_qs(parts.query)  # (Any: the defaults below are None and 0)
        password = unquote(parts.password) if parts.password else (query.get("password") or [None])[0]
        username = unquote(parts.username) if parts.username else None
        loop = lambda: asyncio.get_running_loop()  # noqa: E731
        if parts.scheme == "redis":
            host, port = parts.hostname or "127.0.0.1", parts.port or 6379
            db = int(parts.path.lstrip("/") or (query.get("db") or [0])[0])
            connect = lambda: loop().create_connection(_Replies, host, port)  # noqa: E731
        elif parts.scheme == "unix":
            path = parts.path
            db = int((query.get("db") or [0])[0])
            connect = lambda: loop().create_unix_connection(_Replies, path)  # noqa: E731
        else:
            return None
        return cls(connect, password, username, db, timeout)

    async def execute(self, *commands: tuple) -> list:
        """Send the commands in one write; their replies, in order (a command's error reply
        comes back as its redis-py exception, not raised). Raises redis-py's ConnectionError
        or TimeoutError when the connection fails or no reply comes in time."""
        payload = b"".join(
            hiredis.pack_command(command) for command in commands
        )  # (first: a bad argument sends nothing)
        protocol = await self._connection()
        futures = protocol.send(payload, len(commands))
        try:
            async with asyncio.timeout(self.timeout):
                replies = [await future for future in futures]
        except TimeoutError:
            self._drop(protocol, redis.exceptions.TimeoutError("Timeout reading from the event loop's connection"))
            raise redis.exceptions.TimeoutError("Timeout reading from the event loop's connection") from None
        return [_error(reply) if isinstance(reply, hiredis.ReplyError) else reply for reply in replies]

    def close(self):
        if self._protocol is not None:
            self._drop(self._protocol, redis.exceptions.ConnectionError("closed"))

    async def _connection(self) -> "_Replies":
        protocol = self._protocol
        if protocol is not None and not protocol.lost and not protocol.transport.is_closing():
            return protocol
        if self._connecting is None:  # (one connect for every command that waits for it)
            self._connecting = asyncio.ensure_future(self._open())
            self._connecting.add_done_callback(self._connected)
        return await asyncio.shield(self._connecting)

    def _connected(self, connecting: asyncio.Future):
        if self._connecting is connecting:
            self._connecting = None
        if not connecting.cancelled():
            connecting.exception()  # (retrieved: the waiters, if any, get it too)

    async def _open(self) -> "_Replies":
        protocol = None
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, protocol = await self._connect()
                if self._hello:
                    payload = b"".join(hiredis.pack_command(command) for command in self._hello)
                    for future in protocol.send(payload, len(self._hello)):
                        reply = await future
                        if isinstance(reply, hiredis.ReplyError):
                            raise redis.exceptions.AuthenticationError(str(reply))
        except BaseException as e:
            if protocol is not None:
                protocol.transport.close()
            if isinstance(e, OSError):
                raise redis.exceptions.ConnectionError(f"Error connecting from the event loop: {e}") from None
            if isinstance(e, TimeoutError):
                raise redis.exceptions.TimeoutError("Timeout connecting from the event loop") from None
            raise
        self._protocol = protocol
        return protocol

    def _drop(self, protocol: "_Replies", error: Exception):
        protocol.fail(error)
        protocol.transport.close()
        if self._protocol is protocol:
            self._protocol = None


class _Replies(asyncio.Protocol):
    """Hands each reply that arrives to the oldest command still waiting for one."""

    def __init__(self):
        self.reader = hiredis.Reader()
        self.waiting: deque[asyncio.Future] = deque()
        self.transport: Any = None  # (set by connection_made(), before any use)
        self.lost = False

    def connection_made(self, transport):
        self.transport = transport

    def send(self, payload: bytes, replies: int) -> list[asyncio.Future]:
        """Write `payload` (that many commands); one future per reply to come."""
        if self.lost or self.transport.is_closing():
            raise redis.exceptions.ConnectionError("the event loop's connection was lost")
        try:
            self.transport.write(payload)
        except (OSError, RuntimeError) as e:  # (uvloop: a write after the peer closed, before connection_lost)
            self.fail(redis.exceptions.ConnectionError(f"the event loop's connection was lost: {e}"))
            self.transport.close()
            raise redis.exceptions.ConnectionError(f"the event loop's connection was lost: {e}") from None
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in range(replies)]
        self.waiting.extend(futures)
        return futures

    def data_received(self, data: bytes):
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            if self.waiting:
                future = self.waiting.popleft()
                if not future.done():
                    future.set_result(reply)

    def connection_lost(self, exc):
        self.fail(redis.exceptions.ConnectionError(f"the event loop's connection was lost: {exc or 'closed'}"))

    def fail(self, error: Exception):
        self.lost = True
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(error)
                future.exception()  # (retrieved: a waiter that gave up meanwhile logs nothing)


def _error(reply: hiredis.ReplyError) -> Exception:
    """redis-py's exception for an error reply (NOSCRIPT → NoScriptError, and so on)."""
    return redis.connection.DefaultParser.parse_error(str(reply))
