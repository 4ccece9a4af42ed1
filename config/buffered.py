"""The web server's front: whole requests first, then a Python thread.

A sync WSGI server gives each connection a worker while it reads the body, so two
clients that send half a body hold two workers until a timeout (a slowloris stall).
This ASGI app reads the whole body first, in the event loop, where a slow client costs
a coroutine; only a complete request goes to Django's WSGI app, in a small thread pool.
Bodies arrive however the client framed them (Content-Length or chunked): the WSGI
environ always gets the exact CONTENT_LENGTH. A body over the limit is refused with 413
as soon as it passes the limit; one that takes longer than BODY_TIMEOUT is refused with
408. Responses are WSGI responses (the live stream has its own ASGI server), except for
`/api/event`, which the event front answers in the event loop with group commit
(analytics/api/event_front.py).

Served by granian's ASGI interface (`config.buffered:application`); see config/runner.py.
"""
import asyncio
import io
import logging
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import orjson

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

BODY_TIMEOUT = float(os.environ.get("TALLY_BODY_TIMEOUT", "10"))
# Threads per worker process that run Django. Measured here (2 cores, 2 workers, single
# events): 1 thread ~1,860 req/s, 2 ~1,620, 4 ~1,650 (gunicorn sync: ~1,560). Two, so
# one slow dashboard request does not hold up the worker's ingestion.
THREADS = int(os.environ.get("TALLY_WEB_THREADS", "2"))


log = logging.getLogger(__name__)


def _error(status: int, message: str):
    return status, [(b"content-type", b"application/json")], orjson.dumps({"error": message})


class BufferedWSGI:
    def __init__(self, wsgi_app, max_body: int, threads: int = THREADS, body_timeout: float = BODY_TIMEOUT):
        self.app = wsgi_app
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="wsgi")
        from analytics.api.event_front import EventFront  # (needs Django set up: _build() does it first)

        self.front = EventFront(self.pool)  # POST /api/event, with group commit

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self._lifespan(receive, send)
        if scope["type"] != "http":
            return
        front = scope["path"] == self.front.PATH
        limit = self.front.max_body if front else self.max_body  # (one event's limit, not a batch's)
        refuse = self.front.error if front else _error  # (the front's errors carry its CORS headers)
        try:
            async with asyncio.timeout(self.body_timeout):  # (cheaper than wait_for: no task of its own)
                body = await self._body(receive, limit)
        except TooLarge:
            return await self._send(send, *refuse(413, f"body too large: more than {limit} bytes"))
        except TimeoutError:
            return await self._send(send, *refuse(408, f"the body took more than {self.body_timeout:.0f}s to arrive"))
        except Disconnected:
            return
        if front:
            try:
                status, headers, content = await self.front.handle(scope, body)
            except Exception:
                log.exception("%s %s failed", scope["method"], scope["path"])
                status, headers, content = _error(500, "internal error")
        else:
            loop = asyncio.get_running_loop()
            status, headers, content = await loop.run_in_executor(self.pool, self._run, scope, body)
        await self._send(send, status, headers, content)

    async def _body(self, receive, limit: int) -> bytes:
        parts, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise TooLarge
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)

    def _run(self, scope, body: bytes):
        """Call the WSGI app in a pool thread; returns (status, headers, body)."""
        environ = _environ(scope, body)
        answer = {}

        def start_response(status, headers, exc_info=None):
            answer["status"] = int(status.split(" ", 1)[0])
            answer["headers"] = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]

        result = self.app(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        return answer["status"], answer["headers"], content

    @staticmethod
    async def _send(send, status, headers, content):
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

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


def _environ(scope, body: bytes) -> dict:
    """A WSGI environ (PEP 3333) for an ASGI HTTP scope and its whole body."""
    server = scope.get("server") or ("127.0.0.1", 80)
    client = scope.get("client") or ("", 0)
    environ = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": scope.get("root_path", "").encode("utf-8").decode("latin-1"),
        "PATH_INFO": scope["path"].encode("utf-8").decode("latin-1"),
        "QUERY_STRING": scope["query_string"].decode("latin-1"),
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": client[0],
        "REMOTE_PORT": str(client[1]),
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        if name in ("CONTENT_LENGTH", "TRANSFER_ENCODING"):
            continue  # the body is whole now: its length is the one above
        value = raw_value.decode("latin-1")
        if name == "CONTENT_TYPE":
            environ["CONTENT_TYPE"] = value
            continue
        key = f"HTTP_{name}"
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


def _build():
    from django.conf import settings

    from config.wsgi import application as wsgi_application

    return BufferedWSGI(wsgi_application, max_body=settings.MAX_BATCH_BODY + 1)


application = _build()
