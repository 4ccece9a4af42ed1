"""The web front `make run` serves (server/front.py over granian's RSGI interface): bodies
refused as soon as they pass the limit or take too long, and requests read the same way
whichever interface served them (RSGI under `make run`, ASGI under any other server)."""

import json
import socket
import time
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest

from server.front import Request


def exchange(url: str, head: bytes, body: bytes, wait: float = 10) -> bytes:
    """Send a request's head and (part of) its body on a raw socket; what comes back."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=wait) as s:
        s.sendall(head + body)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < _length(answer):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


def _length(answer: bytes) -> int:
    for line in answer.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def head(path: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 Firefox/128.0\r\n"
        f"Content-Type: text/plain\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


@pytest.mark.slow
@pytest.mark.one_leg
def test_a_body_past_the_limit_is_refused_before_it_is_whole(front_server, site):
    started = time.monotonic()
    answer = exchange(front_server, head("/api/event", 50_000_000), b"x" * 200_000)  # (most of it never sent)
    status, _, rest = answer.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 413"), answer[:200]
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert b"access-control-allow-origin: *" in headers.lower()
    assert "body too large" in json.loads(body)["error"]
    assert time.monotonic() - started < 5


@pytest.mark.slow
@pytest.mark.one_leg
def test_a_body_slower_than_the_timeout_is_refused_with_408(front_server, site):
    event = json.dumps({"name": "pageview", "url": "https://example.com/", "domain": "example.com"}).encode()
    started = time.monotonic()
    answer = exchange(front_server, head("/api/event", len(event)), event[:10])  # the rest never comes
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert "took more than 2s" in answer.decode()
    assert 1.5 < time.monotonic() - started < 8


@pytest.mark.slow
@pytest.mark.one_leg
def test_a_header_the_server_cannot_hand_over_is_refused_by_name(front_server, site):
    """granian passes only visible-ASCII header values; a User-Agent or X-Forwarded-For it
    held back must not turn into "no User-Agent" or "no proxy hop" unnoticed."""
    event = json.dumps({"name": "pageview", "url": "https://example.com/", "domain": "example.com"}).encode()
    raw = (
        b"POST /api/event HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 Firefox/128.0\r\n"
        b"X-Forwarded-For: \xfc, 203.0.113.9\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(event)
    )
    answer = exchange(front_server, raw, event)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert json.loads(answer.partition(b"\r\n\r\n")[2]) == {
        "error": "header x-forwarded-for has bytes outside visible ASCII"
    }


class RsgiHeaders:
    """The shape of granian's RSGIHeaders: items() in arrival order, names lower-case;
    keys() names every header, items() only those with visible-ASCII values."""

    def __init__(self, pairs):
        self.pairs = pairs

    def items(self):
        return [(name, value) for name, value in self.pairs if value.isascii()]

    def keys(self):
        return [name for name, _ in self.pairs]


class RsgiScope:
    proto, method, path, query_string, scheme, http_version = "http", "POST", "/api/event", "a=1", "http", "1.1"

    def __init__(self, client: str, pairs):
        self.client, self.server, self.headers = client, "127.0.0.1:8000", RsgiHeaders(pairs)


def test_both_interfaces_read_a_request_alike():
    pairs = [
        ("x-forwarded-for", "198.51.100.1"),
        ("cookie", "a=1"),
        ("x-forwarded-for", "203.0.113.9"),
        ("cookie", "b=2"),
    ]
    rsgi = Request.from_rsgi(RsgiScope("[2001:db8::5]:51000", pairs))
    asgi = Request.from_asgi(
        {
            "method": "POST",
            "path": "/api/event",
            "query_string": b"a=1",
            "scheme": "http",
            "http_version": "1.1",
            "client": ("2001:db8::5", 51000),
            "server": ("127.0.0.1", 8000),
            "headers": [(name.encode(), value.encode()) for name, value in pairs],
        }
    )
    assert rsgi == asgi
    # a repeated X-Forwarded-For is one list (the last untrusted address is the client), cookies one header
    assert rsgi.headers == {"x-forwarded-for": "198.51.100.1,203.0.113.9", "cookie": "a=1; b=2"}
    assert rsgi.client == ("2001:db8::5", 51000)
    assert not rsgi.unreadable


def test_rsgi_names_http_1_0_and_the_headers_it_could_not_read():
    scope = RsgiScope("203.0.113.9:4000", [("user-agent", "Mozilla \u00fc"), ("accept", "*/*")])
    scope.http_version = "1"
    request = Request.from_rsgi(scope)
    assert request.http_version == "1.0"
    assert request.unreadable == {"user-agent"} and "user-agent" not in request.headers


@pytest.mark.slow
@pytest.mark.one_leg
def test_a_batch_cut_short_mid_body_counts_nothing(front_server, make_site, r):
    """A chunked batch whose client goes away mid-body is not counted in part (the client
    never heard back, so it will send the batch again)."""
    site, key = make_site("cut.example")
    lines = b"".join(
        json.dumps({"url": f"https://cut.example/p{i}", "visitor": f"v{i}"}).encode() + b"\n" for i in range(50)
    )
    parts = urlsplit(front_server)
    with socket.create_connection((parts.hostname, parts.port)) as s:
        s.sendall(
            f"POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
            + b"%x\r\n" % len(lines)
            + lines[: len(lines) // 2]
        )  # half a chunk, then gone
        time.sleep(0.3)
    time.sleep(1.0)
    whole = b"%x\r\n%s\r\n0\r\n\r\n" % (len(lines), lines)
    answer = exchange(
        front_server,
        (
            f"POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode(),
        whole,
    )
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["accepted"] == 50
    from analytics.sites import SiteInfo
    from analytics.store import keys

    assert int(r.get(keys.pageviews(site.pk, SiteInfo.from_model(site).today())) or 0) == 50  # the cut one: none


@pytest.mark.parametrize("key", ["ключ-17".encode(), "order 17 ✓".encode(), b"caf\xe9"])
def test_a_non_ascii_idempotency_key_is_refused_not_ignored(front_server, make_site, r, key):
    """The server cannot hand over a header value outside visible ASCII: the batch is
    refused by name (400), not counted as if it had no key (a retry counted again)."""
    site, api_key = make_site()
    body = json.dumps(
        [{"url": "https://example.com/k", "visitor": f"v{n}", "name": "pageview"} for n in range(5)]
    ).encode()
    request = (
        (
            f"POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {api_key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        ).encode()
        + b"Idempotency-Key: "
        + key
        + b"\r\n\r\n"
    )
    answer = exchange(front_server, request, body)
    assert answer.startswith(b"HTTP/1.1 400") and b"Idempotency-Key" in answer, answer
    ascii_key = request.replace(b"Idempotency-Key: " + key, b"Idempotency-Key: order-17")
    answers = [exchange(front_server, ascii_key, body) for _ in range(2)]
    assert [b"idempotent-replayed: true" in a.lower() for a in answers] == [False, True]
    from analytics.store import keys

    assert int(r.get(keys.pageviews(site.id, datetime.now(UTC).date())) or 0) == 5


@pytest.mark.parametrize(
    "path, status",
    [
        ("/api/v1/stats/aggregate?site=example.com&x=日本", b"200"),
        ("/api/v1/stats/aggregate?site=日本.example", b"403"),
    ],
)
def test_a_query_string_outside_latin_1_is_read_not_a_500(front_server, make_site, path, status):
    """Raw UTF-8 in a query string answered a 500 (UnicodeEncodeError in the WSGI hand-over):
    it is read as the UTF-8 it is."""
    _, api_key = make_site()
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {api_key}\r\n\r\n".encode()
    answer = exchange(front_server, request, b"")
    assert answer.split(b" ", 2)[1] == status, answer[:300]


def test_a_connection_that_never_finishes_its_headers_is_closed(front_server):
    """Slow-header connections are closed after the header time-out (make run: 10 s; here
    1.5 s), not held for ever."""
    parts = urlsplit(front_server)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as s:
        began = time.monotonic()
        s.sendall(b"GET /api/event HTTP/1.1\r\nHost: x\r\n")  # (never the blank line)
        assert s.recv(100) == b""  # closed
        assert time.monotonic() - began < 5


@pytest.mark.parametrize("path", ["/api/event", "/api/v1/events"])
def test_a_malformed_chunked_body_is_a_400_not_an_empty_500(front_server, path):
    """A chunk size that is not hex made granian answer its own empty 500 (the body could not
    be unframed): the front answers a 400 that says why."""
    request = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    ).encode()
    answer = exchange(front_server, request, b"ZZ\r\nabc\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
    assert "malformed request body" in json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
