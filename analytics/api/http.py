"""Small helpers and decorators shared by the JSON endpoints: errors, body limits, auth, CORS.

Every failure a client can cause ends here as a 4xx JSON `{"error": "..."}`; the views
raise `ApiError` and never build error responses by hand.
"""

import functools
import ipaddress
import zlib

import orjson
from django.conf import settings
from django.http import HttpResponse

from .. import sites
from ..store.connection import OUTAGE

UNREADABLE = "tally.unreadable_headers"  # environ (server/front.py): headers the server held back (non-ASCII values)


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def json_response(data, status=200, headers=None) -> HttpResponse:
    response = HttpResponse(orjson.dumps(data), status=status, content_type="application/json", headers=headers)
    return response


def json_errors(view):
    """Turn ApiError, and a Redis outage or freeze (refused or timed out), into JSON responses."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except ApiError as e:
            return json_response({"error": e.message}, status=e.status, headers=e.headers)
        except OUTAGE:
            return json_response(
                {"error": "storage is unavailable; retry later"}, status=503, headers={"Retry-After": "5"}
            )

    return wrapper


def read_body(request, limit: int) -> bytes:
    """The request body, refusing more than `limit` bytes before reading it all.

    Bodies framed with Content-Length or sent chunked (a WSGI server that de-chunks says
    so with `wsgi.input_terminated`; Tally's own front sets Content-Length) are read, and
    `Content-Encoding: gzip` bodies are inflated, to at most `limit` bytes inflated too
    (a small gzip bomb must not become gigabytes here)."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise ApiError(400, "invalid Content-Length") from None
    if length > limit:
        raise ApiError(413, f"body too large: {length} bytes, at most {limit}")
    if not length and request.META.get("wsgi.input_terminated"):
        body = request.META["wsgi.input"].read(limit + 1)  # chunked: the server ends the stream
    else:
        body = request.read(limit + 1)
    if len(body) > limit:
        raise ApiError(413, f"body too large: more than {limit} bytes")
    return decode_body(body, request.META.get("HTTP_CONTENT_ENCODING", ""), limit)


def decode_body(body: bytes, encoding: str, limit: int) -> bytes:
    """A whole body of at most `limit` bytes as sent, inflated if gzip (to at most `limit`
    bytes too); not empty."""
    encoding = encoding.strip().lower()
    if encoding in ("gzip", "x-gzip"):
        body = _gunzip(body, limit)
    elif encoding not in ("", "identity"):
        raise ApiError(415, f"Content-Encoding {encoding!r} is not supported; send gzip or none")
    if not body.strip():
        raise ApiError(400, "empty body: send a JSON event")
    return body


def _gunzip(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as e:
        raise ApiError(400, f"Content-Encoding gzip: not valid gzip data ({e})") from None
    if len(data) > limit:
        raise ApiError(413, f"body too large: more than {limit} bytes once inflated")
    if not inflater.eof:
        raise ApiError(400, "Content-Encoding gzip: the gzip data is cut short")
    return data


def bearer_site(request) -> "sites.SiteInfo":
    """The site whose API key is in `Authorization: Bearer <key>`, else 401."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "missing API key: send 'Authorization: Bearer <key>'", {"WWW-Authenticate": "Bearer"})
    site = sites.site_for_api_key(token.strip())
    if site is None:
        raise ApiError(401, "invalid API key", {"WWW-Authenticate": "Bearer"})
    return site


def client_ip(request) -> str:
    """The socket's address, or the right-most untrusted X-Forwarded-For hop when the socket
    is a trusted proxy. Without TRUSTED_PROXIES the header is ignored: anyone can forge it."""
    return forwarded_client(request.META.get("REMOTE_ADDR", ""), request.META.get("HTTP_X_FORWARDED_FOR", ""))


def forwarded_client(remote: str, forwarded_for: str) -> str:
    """client_ip() from the socket's address and the X-Forwarded-For header's value."""
    if not is_trusted_proxy(remote):
        return remote
    hops = [h.strip() for h in forwarded_for.split(",") if h.strip()]
    for hop in reversed(hops):
        if not is_trusted_proxy(hop):
            return hop
    return hops[0] if hops else remote


def is_trusted_proxy(address: str) -> bool:
    """Is this address one of TRUSTED_PROXIES (whose forwarding headers we believe)?"""
    global _trusted
    networks = settings.TRUSTED_PROXIES
    if not networks:
        return False
    checked_for, known = _trusted
    if checked_for is not networks:  # (the setting changed: a test's override)
        known = {}
        _trusted = (networks, known)  # (one assignment: a thread never mixes two lists' answers)
    answer = known.get(address)
    if answer is None:
        if len(known) >= 4096:
            known.clear()
        answer = known[address] = _in_networks(address, networks)
    return answer


# Addresses already checked, for the TRUSTED_PROXIES list they were checked against:
# parsing addresses was a twentieth of a single event's time, hashing the networks for a
# cache key another fortieth, and the socket's address, a proxy's, is the same on every
# request.
_trusted: tuple = (None, {})


def _in_networks(address: str, networks) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def methods(*allowed: str):
    """Like Django's require_http_methods, but the 405 is JSON and names the allowed ones.

    A view that allows only safe methods is exempt from the CSRF check: it refuses POST
    and the like itself, and the CSRF middleware would otherwise answer them first with
    an HTML 403 instead of this JSON 405."""

    def decorator(view):
        @functools.wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method not in allowed:
                return json_response(
                    {"error": f"method {request.method} not allowed; use {', '.join(allowed)}"},
                    status=405,
                    headers={"Allow": ", ".join(allowed)},
                )
            return view(request, *args, **kwargs)

        if set(allowed) <= {"GET", "HEAD", "OPTIONS"}:
            setattr(wrapper, "csrf_exempt", True)  # noqa: B010  (what @csrf_exempt sets; mypy cannot see it)
        return wrapper

    return decorator


CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type",
    "Access-Control-Max-Age": "86400",
}


def cors(view):
    """Let any page post to this endpoint (trackers run on other origins); answer preflights."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method == "OPTIONS":
            response = HttpResponse(status=204)
        else:
            response = view(request, *args, **kwargs)
        for name, value in CORS_HEADERS.items():
            response[name] = value
        return response

    return wrapper
