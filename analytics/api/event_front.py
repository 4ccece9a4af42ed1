"""`POST /api/event` without Django's request machinery, with group commit.

Browsers send one event per request, so this is the path real traffic takes, and most of
its cost was around the work, not the work: building a Django request, middleware, URL
resolution, a thread for each request, and a Redis round trip of its own. Behind `make
run`'s server (server/front.py) the front answers this one path itself, in the event
loop: the same checks as the Django view (api/ingest.py single_event(), the same answers
and error messages, byte for byte), then the event joins the next group write
(capture/group_commit.py). Every other path, and this one under any other server, is
Django's.

The site lookup is cached per process (sites.py); on a miss it reads the database, which
Django does not allow inside an event loop, so that one check runs in the Django thread
pool instead.
"""

import asyncio
from typing import Any

import orjson
from django.conf import settings
from django.core.exceptions import SynchronousOnlyOperation

from ..capture.group_commit import SPOOLED, Entry, GroupCommit
from ..capture.spool import StorageUnavailable
from ..ingest import visit
from ..store.limits import Limited
from .http import CORS_HEADERS, ApiError, decode_body, forwarded_client
from .ingest import DROPPED_HEADER, SPOOLED_HEADER, dropped_header, single_event

PATH = "/api/event"
ALLOWED = ("POST", "OPTIONS")

# What Django's CORS decorator and SecurityMiddleware add to this endpoint's answers.
_COMMON = [
    *((name.lower(), value) for name, value in CORS_HEADERS.items()),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", settings.SECURE_REFERRER_POLICY),
    ("cross-origin-opener-policy", "same-origin"),
]
_READ = frozenset({"user-agent", "x-forwarded-for", "content-encoding"})  # the headers the front reads
_TEXT = [("content-type", "text/plain"), *_COMMON]
_JSON = [("content-type", "application/json"), *_COMMON]


class EventFront:
    PATH = PATH

    def __init__(self, django_pool):
        self.django_pool = django_pool  # where a check that reads the database runs
        self.commit = GroupCommit()
        self.max_body = settings.MAX_EVENT_BODY  # bytes on the wire: the front stops reading past them
        visit.warm_up()  # (each worker loads its parsers and databases before it serves)

    @staticmethod
    def error(status: int, message: str, headers: dict | None = None):
        """An error answer of this endpoint: JSON, with its CORS and security headers."""
        return _error(status, message, headers)

    async def handle(self, request, body: bytes):
        """(status, headers, body) for a request to PATH (server/front.py's Request)
        whose whole body is `body`."""
        method = request.method
        if method == "OPTIONS":
            return 204, list(_COMMON), b""
        if method not in ALLOWED:
            return _error(405, f"method {method} not allowed; use {', '.join(ALLOWED)}", {"Allow": ", ".join(ALLOWED)})
        headers = request.headers
        try:
            if request.unreadable & _READ:
                raise ApiError(400, f"header {sorted(request.unreadable & _READ)[0]} has bytes outside visible ASCII")
            if len(body) > settings.MAX_EVENT_BODY:
                raise ApiError(413, f"body too large: {len(body)} bytes, at most {settings.MAX_EVENT_BODY}")
            body = decode_body(body, headers.get("content-encoding", ""), settings.MAX_EVENT_BODY)
            ip = forwarded_client(request.client[0], headers.get("x-forwarded-for", ""))
            user_agent = headers.get("user-agent", "")
            try:
                accepted = single_event(body, user_agent, ip)
            except SynchronousOnlyOperation:  # a site not in this process's cache: read it in a thread
                accepted = await asyncio.get_running_loop().run_in_executor(
                    self.django_pool, single_event, body, user_agent, ip
                )
            outcomes: list[Any]  # (each a result, or the exception it raised)
            if len(accepted.targets) == 1:  # (the usual case: no gather, no tasks of its own)
                try:
                    outcomes = [await self.commit.submit(Entry(*accepted.targets[0]))]
                except Exception as e:
                    outcomes = [e]
            else:
                outcomes = await asyncio.gather(
                    *(self.commit.submit(Entry(site, hit, limits)) for site, hit, limits in accepted.targets),
                    return_exceptions=True,
                )
        except ApiError as e:
            return _error(e.status, e.message, e.headers)
        extra: list[tuple[str, str]] = []
        for outcome in outcomes:
            if isinstance(outcome, Limited):
                return _error(429, str(outcome), {"Retry-After": str(outcome.retry_after)})
            if isinstance(outcome, StorageUnavailable):
                return _error(503, "storage is unavailable; retry later", {"Retry-After": "5"})
            if isinstance(outcome, BaseException):
                raise outcome
            if outcome == SPOOLED and not extra:
                extra.append((SPOOLED_HEADER.lower(), "1"))
        if accepted.dropped:
            extra.append((DROPPED_HEADER.lower(), dropped_header(accepted.dropped)))
        return 202, [*_TEXT, *extra], b"ok"


def _error(status: int, message: str, headers: dict | None = None):
    extra = [(name.lower(), value) for name, value in (headers or {}).items()]
    return status, [*_JSON, *extra], orjson.dumps({"error": message})
