"""A test client for the ASGI front `make run` serves (server/front.py), in process.

It takes the Django test client's arguments (`post(path, data, content_type, **META)`)
so the same tests can run against the Django views and against the event front, which
answers `/api/event` itself: the two must give the same answers. Each request runs the
app on a fresh event loop, in a thread of its own; the front's threads read the database, so tests that use it
need `transactional_db` (what a test transaction holds, other threads cannot see).
"""

import asyncio
import json
import threading


def run_loop(coroutine_function, *args):
    """asyncio.run(coroutine_function(*args)) in a thread of its own: the test's thread may
    have a loop running already (Playwright's sync API leaves one)."""
    result = {}

    def target():
        try:
            result["value"] = asyncio.run(coroutine_function(*args))
        except BaseException as e:  # (raised again in the caller's thread)
            result["error"] = e

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


class FrontResponse:
    def __init__(self, status: int, headers: list, content: bytes):
        self.status_code = status
        self.content = content
        self.headers = {}
        for name, value in headers:
            self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def __getitem__(self, name: str) -> str:
        return self.headers[name.lower()]

    def __contains__(self, name: str) -> bool:
        return name.lower() in self.headers

    def get(self, name: str, default=None):
        return self.headers.get(name.lower(), default)

    def json(self):
        return json.loads(self.content)


def catch_up_every_site():
    from analytics.capture import inbox
    from analytics.models import Site
    from analytics.sites import SiteInfo
    from analytics.store.connection import get_redis

    for site in Site.objects.all():
        inbox.flush(get_redis(), SiteInfo.from_model(site))


class FrontClient:
    def __init__(self):
        from server.front import application

        self.app = application

    def post(self, path, data=b"", content_type="application/octet-stream", **meta):
        body = data.encode() if isinstance(data, str) else data
        return self.request("POST", path, body, {"CONTENT_TYPE": content_type, **meta})

    def get(self, path, **meta):
        return self.request("GET", path, b"", meta)

    def options(self, path, **meta):
        return self.request("OPTIONS", path, b"", meta)

    def request(self, method: str, path: str, body: bytes, meta: dict) -> FrontResponse:
        response = run_loop(self.send, method, path, body, meta)
        if path == "/api/event":  # (what it pushed into an inbox is counted, as a read would have it)
            catch_up_every_site()
        return response

    async def send(self, method: str, path: str, body: bytes, meta: dict) -> FrontResponse:
        headers = [(b"host", b"testserver"), (b"content-length", str(len(body)).encode())]
        for name, value in meta.items():
            if name == "CONTENT_TYPE":
                headers.append((b"content-type", value.encode("latin-1")))
            elif name.startswith("HTTP_"):
                headers.append((name[5:].replace("_", "-").lower().encode(), value.encode("latin-1")))
        scope = {
            "type": "http",
            "method": method,
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "scheme": "http",
            "http_version": "1.1",
            "headers": headers,
            "client": (meta.get("REMOTE_ADDR", "127.0.0.1"), 50000),
            "server": ("testserver", 80),
        }
        sent = [{"type": "http.request", "body": body, "more_body": False}]
        answer = {}

        async def receive():
            if sent:
                return sent.pop()
            await asyncio.sleep(3600)  # (the app never asks twice for a whole body)

        async def send(message):
            if message["type"] == "http.response.start":
                answer["status"], answer["headers"] = message["status"], message.get("headers", [])
            elif message["type"] == "http.response.body":
                answer["body"] = answer.get("body", b"") + message.get("body", b"")

        await self.app(scope, receive, send)
        return FrontResponse(answer["status"], answer["headers"], answer.get("body", b""))
