"""The web server's front: whole requests first, then a Python thread.

A sync WSGI server gives each connection a worker while it reads the body, so two
clients that send half a body hold two workers until a timeout (a slowloris stall).
This app reads the whole body first, in the event loop, where a slow client costs
a coroutine; only a complete request goes to Django's WSGI app, in a small thread pool.
Bodies arrive however the client framed them (Content-Length or chunked): the WSGI
environ always gets the exact CONTENT_LENGTH. A body over the limit is refused with 413
as soon as it passes the limit; one that takes longer than BODY_TIMEOUT is refused with
408. One kind of request may be larger: an upload to the admin's Imports page from a staff
member's session (analytics.admin.may_upload, asked before the body is read), up to
IMPORT_UPLOAD_MAX_BYTES, spooled to a temporary file, with a timeout that grows with its
size (UPLOAD_RATE). Responses are WSGI responses (the live stream has its own ASGI server), except for
`/api/event`, which the event front answers in the event loop with group commit
(analytics/api/event_front.py).

Served by granian's own RSGI interface (`server.front:application`, see server/runner.py):
measured, 4,669 single events a second at 16 connections against ~4,200 through its ASGI
interface, the web worker's CPU 204 µs a request against 251. The same object is an ASGI
app for any other server.
"""

import asyncio
import io
import logging
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import orjson
from granian.rsgi import ProtocolClosed as RSGIProtocolClosed
from granian.rsgi import ProtocolError as RSGIProtocolError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

BODY_TIMEOUT = float(os.environ.get("TALLY_BODY_TIMEOUT", "10"))  # (seconds a body may take to arrive: then 408)
# Threads per worker process that run Django. Measured here (2 cores, 2 workers, single
# events): 1 thread ~1,860 req/s, 2 ~1,620, 4 ~1,650 (gunicorn sync: ~1,560). Two, so
# one slow dashboard request does not hold up the worker's ingestion.
THREADS = int(os.environ.get("TALLY_WEB_THREADS", "2"))
UPLOAD_RATE = 128 * 1024  # bytes a second an import's upload may arrive at, slowest (then 408)
SPOOL_IN_MEMORY = 1 << 20  # an upload's first bytes stay in memory; the rest goes to a temporary file


log = logging.getLogger(__name__)


def _error(status: int, message: str):
    return status, [("content-type", "application/json")], orjson.dumps({"error": message})


class Request(NamedTuple):
    """What the event front and the WSGI environ need of a request, from either interface."""

    method: str
    path: str
    query_string: str
    headers: dict[str, str]  # by lower-case name; a repeated header's values joined (cookies with "; ", others ",")
    client: tuple[str, int]
    server: tuple[str, int]
    scheme: str
    http_version: str
    root_path: str = ""
    unreadable: frozenset = frozenset()  # header names whose values the server could not hand over

    @classmethod
    def from_asgi(cls, scope) -> "Request":
        return cls(
            scope["method"],
            scope["path"],
            scope["query_string"].decode("latin-1"),
            _joined((name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in scope["headers"]),
            tuple(scope.get("client") or ("", 0)),
            tuple(scope.get("server") or ("127.0.0.1", 80)),
            scope.get("scheme", "http"),
            scope.get("http_version", "1.1"),
            scope.get("root_path", ""),
        )

    @classmethod
    def from_rsgi(cls, scope) -> "Request":
        """(granian hands over only header values of visible ASCII: a header it held back
        is listed in `unreadable`, and the event front refuses requests whose headers it
        reads are among them, where ASGI would have read the bytes as latin-1.)"""
        items = scope.headers.items()
        headers = _joined(items)
        unreadable = frozenset(name for name in scope.headers.keys() if name not in headers)
        return cls(
            # (granian decodes the query string as UTF-8; WSGI carries its bytes as latin-1 characters)
            scope.method,
            scope.path,
            scope.query_string.encode("utf-8", "surrogateescape").decode("latin-1"),
            headers,
            _address(scope.client, 0),
            _address(scope.server, 80),
            scope.scheme,
            _HTTP_VERSIONS.get(scope.http_version, scope.http_version),
            unreadable=unreadable,
        )


_HTTP_VERSIONS = {"1": "1.0"}  # (RSGI's names, as WSGI's SERVER_PROTOCOL spells them)


def _joined(pairs) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in pairs:
        if name in found:
            value = found[name] + ("; " if name == "cookie" else ",") + value
        found[name] = value
    return found


def _address(text: str, default_port: int) -> tuple[str, int]:
    """("host", port) from RSGI's "host:port" ("[::1]:8000" for IPv6)."""
    host, _, port = (text or "").rpartition(":")
    if not host:
        return text or "", default_port
    return host.strip("[]"), int(port) if port.isdigit() else default_port


class BufferedWSGI:
    """The application object: granian's RSGI (`__rsgi__`, what `make run` serves) or
    ASGI (`__call__`, for any other server). Both read the whole body, then answer the
    same way (`_read_and_answer`)."""

    def __init__(self, wsgi_app, max_body: int, threads: int = THREADS, body_timeout: float = BODY_TIMEOUT):
        self.app = wsgi_app
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="wsgi")
        from analytics.api.event_front import EventFront  # (needs Django set up: _build() does it first)

        self.front = EventFront(self.pool)  # POST /api/event, with group commit

    async def __rsgi__(self, scope, proto):
        if scope.proto != "http":
            return
        request = Request.from_rsgi(scope)
        length = request.headers.get("content-length", "")
        # A declared length within the limit (and no chunked framing): the body in one call
        # (iterating over the protocol's chunks costs the front a tenth of its time); else
        # chunk by chunk, refused as soon as it passes the limit.
        one_call = (
            length.isdigit() and int(length) <= self._limit(request) and "transfer-encoding" not in request.headers
        )
        answer = await self._read_and_answer(request, _RsgiBody(proto), proto if one_call else None, one_call)
        if answer is not None:
            try:
                proto.response_bytes(*answer)
            except RSGIProtocolClosed:  # (the client went away meanwhile)
                pass

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self._lifespan(receive, send)
        if scope["type"] != "http":
            return
        answer = await self._read_and_answer(Request.from_asgi(scope), _AsgiBody(receive))
        if answer is not None:
            status, headers, content = answer
            headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": content})

    def _limit(self, request: Request) -> int:
        return self.front.max_body if request.path == self.front.PATH else self.max_body  # (one event's, not a batch's)

    async def _read_and_answer(self, request: Request, chunks, whole=None, one_call=False) -> tuple | None:
        """(status, headers, body) for the request whose body `chunks` yields (or `whole()`
        returns, when its declared length is within the limit); None when the client went
        away before its body was whole."""
        front = request.path == self.front.PATH
        limit, timeout = self._limit(request), self.body_timeout
        refuse = self.front.error if front else _error  # (the front's errors carry its CORS headers)
        upload = not one_call and await self._large_upload(request)
        if upload:
            from django.conf import settings

            limit = settings.IMPORT_UPLOAD_MAX_BYTES
            declared = request.headers.get("content-length", "")
            timeout = max(timeout, (int(declared) if declared.isdigit() else limit) / UPLOAD_RATE)
        try:
            async with asyncio.timeout(timeout):  # (cheaper than wait_for: no task of its own)
                if whole is not None:
                    body = await whole()
                else:
                    body = await (_spooled(chunks, limit) if upload else _whole(chunks, limit))
            if whole is not None and len(body) != int(request.headers["content-length"]):
                return None  # (the client went away before the body was whole)
        except TooLarge:
            return refuse(413, f"body too large: more than {limit} bytes")
        except TimeoutError:
            return refuse(408, f"the body took more than {timeout:.0f}s to arrive")
        except RSGIProtocolClosed:
            return None
        except (Disconnected, RSGIProtocolError):
            # A body granian could not unframe (a chunk size that is not hex) ends the way a
            # body cut short does (tests/test_web_front.py): both get a 400 that says so,
            # which a client that went away never reads. Without it granian answered its
            # own empty 500.
            return refuse(400, "malformed request body: its chunked framing could not be read, or it ended early")
        if front:
            try:
                return await self.front.handle(request, body)
            except Exception:
                log.exception("%s %s failed", request.method, request.path)
                return _error(500, "internal error")
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, self._run, request, body)
        finally:
            if not isinstance(body, bytes):
                body.close()  # (a spooled upload's temporary file goes)

    async def _large_upload(self, request: Request) -> bool:
        """May this request's body pass the usual limit (an import's upload, by a staff member)?"""
        if request.method != "POST" or not request.path.endswith("/imports/upload/"):
            return False
        from analytics.admin import may_upload

        cookie = request.headers.get("cookie", "")
        return await asyncio.get_running_loop().run_in_executor(self.pool, may_upload, request.path, cookie)

    def _run(self, request: Request, body):
        """Call the WSGI app in a pool thread; returns (status, headers, body)."""
        answer: dict[str, Any] = {}

        def start_response(status, headers, exc_info=None):
            answer["status"] = int(status.split(" ", 1)[0])
            answer["headers"] = [(name.lower(), value) for name, value in headers]

        result = self.app(_environ(request, body), start_response)
        try:
            content = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        return answer["status"], answer["headers"], content

    @staticmethod
    async def _lifespan(receive, send):
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return


class TooLarge(Exception):
    pass


class Disconnected(Exception):
    pass


class _AsgiBody:
    """An ASGI request's body chunks, as RSGI's protocol object yields them."""

    def __init__(self, receive):
        self.receive = receive
        self.more = True

    def __aiter__(self):
        return self

    async def __anext__(self) -> bytes:
        if not self.more:
            raise StopAsyncIteration
        message = await self.receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        self.more = message.get("more_body", False)
        return message.get("body", b"")


class _RsgiBody:
    """An RSGI request's body chunks. granian (2.8) ends a body the same way whether it came
    whole or the client went away mid-body, but for one thing: a body cut short yields a
    second empty chunk after the one that ends it (tests/test_web_front.py holds it to
    that). Without this, a batch cut short would be counted in part."""

    def __init__(self, proto):
        self.proto, self.chunks, self.ended = proto, None, False

    def __aiter__(self):
        return self

    async def __anext__(self) -> bytes:
        if self.chunks is None:  # (not before: a body read in one call never iterates)
            self.chunks = self.proto.__aiter__()
        chunk = await self.chunks.__anext__()
        if self.ended:
            raise Disconnected
        self.ended = not chunk
        return chunk


async def _spooled(chunks, limit: int):
    """The body in a temporary file (in memory up to SPOOL_IN_MEMORY), refused (TooLarge)
    as soon as it passes `limit` bytes."""
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY, prefix="tally-upload-")
    size = 0
    try:
        async for chunk in chunks:
            size += len(chunk)
            if size > limit:
                raise TooLarge
            spool.write(chunk)  # (a chunk into the page cache: no wait worth a thread)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


async def _whole(chunks, limit: int) -> bytes:
    """The body, refused (TooLarge) as soon as it passes `limit` bytes."""
    parts, size = [], 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise TooLarge
        parts.append(chunk)
    return b"".join(parts)


def _environ(request: Request, body) -> dict:
    """A WSGI environ (PEP 3333) for a request and its whole body (bytes, or a spooled file)."""
    if isinstance(body, bytes):
        length, stream = len(body), io.BytesIO(body)
    else:
        length, stream = body.seek(0, io.SEEK_END), body
        body.seek(0)
    environ = {
        "REQUEST_METHOD": request.method,
        "SCRIPT_NAME": request.root_path.encode("utf-8").decode("latin-1"),
        "PATH_INFO": request.path.encode("utf-8").decode("latin-1"),
        "QUERY_STRING": request.query_string,
        "SERVER_NAME": request.server[0],
        "SERVER_PORT": str(request.server[1]),
        "SERVER_PROTOCOL": f"HTTP/{request.http_version}",
        "REMOTE_ADDR": request.client[0],
        "REMOTE_PORT": str(request.client[1]),
        "CONTENT_LENGTH": str(length),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": request.scheme,
        "wsgi.input": stream,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for name, value in request.headers.items():
        if name in ("content-length", "transfer-encoding"):
            continue  # the body is whole now: its length is the one above
        if name == "content-type":
            environ["CONTENT_TYPE"] = value
        else:
            environ["HTTP_" + name.upper().replace("-", "_")] = value
    from analytics.api.http import UNREADABLE  # (Django is set up by now)

    environ[UNREADABLE] = request.unreadable  # (a header the server held back is not "absent": views can tell)
    return environ


def _build():
    from django.conf import settings

    from config.wsgi import application as wsgi_application

    return BufferedWSGI(wsgi_application, max_body=settings.MAX_BATCH_BODY + 1)


application = _build()
