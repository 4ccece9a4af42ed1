"""A real HTTP receiver for webhooks (http.server on 127.0.0.1, a free port): it keeps
every request (path, headers, body) and answers 500 to the first `failures` of them."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class Receiver:
    def __init__(self):
        self.requests: list[dict] = []
        self.failures = 0
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.arrived:
                    receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    failing = receiver.failures > 0
                    receiver.failures -= 1 if failing else 0
                    receiver.arrived.notify_all()
                if self.path.startswith("/redirect"):  # (to where a webhook must not go)
                    self.send_response(302)
                    self.send_header("Location", "/landed")
                else:
                    self.send_response(500 if failing else 200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def wait(self, count: int, timeout: float = 10.0) -> list[dict]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.requests) >= count, timeout)
        return list(self.requests)


@pytest.fixture
def receiver(settings):
    """The receiver, and Tally allowed to post to it (a loopback address)."""
    found = Receiver()
    found.thread.start()
    settings.ALERT_WEBHOOKS_PRIVATE = True
    try:
        yield found
    finally:
        found.server.shutdown()
        found.server.server_close()
