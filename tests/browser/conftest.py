"""Browser fixtures: Debian's Chromium driven by Playwright, Django's live server, and the
ASGI live-stream server in a thread.

No Chromium: the browser tests skip with a message, except under CI=true, where a
missing browser fails the run (.ci/run installs it).
"""

import io
import os
import re
import shutil
import threading
import time

import pytest
from django.core.management import call_command

from tests.redis_server import free_port

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36"

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
# here are still plain synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        message = f"Chromium not found at {CHROMIUM}: install it with `apt-get install -y chromium`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: browser tests may not be skipped)")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(autouse=True)
def static_by_plain_names(settings):
    """The live server's static handler serves from the source folders by plain names,
    not the hashed names of the collected manifest (make run serves those: see
    test_make_run.py)."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture
def live_stream(settings):
    """The ASGI server for server-sent events, as `make run` starts it, in a thread."""
    import uvicorn

    from config.asgi import application

    port = free_port()
    settings.LIVE_PORT = port
    server = uvicorn.Server(
        uvicorn.Config(application, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield port
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def context(browser):
    context = browser.new_context(user_agent=USER_AGENT, viewport={"width": 1280, "height": 900})
    yield context
    context.close()


PASSWORD = "correct horse battery"


@pytest.fixture
def demo(r, db):
    call_command("demo", "--visitors", "60", stdout=io.StringIO(), stderr=io.StringIO())


@pytest.fixture
def user_page(r, live_server, live_stream, django_user_model, context, demo):
    """A logged-in tab that records every request's URL and every console error."""
    django_user_model.objects.create_superuser("admin", "", PASSWORD)
    page = context.new_page()
    page.problems, page.requested = [], []
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    page.on("response", lambda resp: page.problems.append(f"{resp.status} {resp.url}") if resp.status >= 400 else None)
    page.on("request", lambda req: page.requested.append(req.url))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/$"))
    return page
