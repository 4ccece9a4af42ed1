"""`make run`'s supervisor end to end: embedded Redis, migrations, the web server, real
HTTP (slow clients, chunked and gzip bodies), the embedded Redis killed and restarted on
its port, then Ctrl-C stops everything and the data survives a restart (append-only file)."""

import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from analytics.capture import inbox
from tests.hll import hll_tolerance
from tests.redis_server import free_port

BASE = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.slow,
    pytest.mark.one_leg,
]  # (make run starts its own embedded Valkey 9.1 whichever server a leg sets)


def start(var_dir: Path, port: int):
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(TALLY_VAR_DIR=str(var_dir), PORT=str(port), REDIS_PORT=str(free_port()), WEB_WORKERS="1")
    # The test kills Redis (-9) and counts every event after: fsync before each reply, since
    # the default `everysec` may lose the last ~2 s when the disk's fsync lags (docs/operations.md, Reliability).
    env["TALLY_REDIS_APPENDFSYNC"] = "always"
    process = subprocess.Popen(
        [sys.executable, "-m", "server.runner"],
        cwd=BASE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    deadline = time.monotonic() + 90
    for line in process.stdout:
        lines.append(line)
        if "dashboard: http://" in line:
            break
        assert time.monotonic() < deadline, "".join(lines)
    else:
        raise AssertionError("runner exited:\n" + "".join(lines))
    wait_for(f"http://127.0.0.1:{port}/accounts/login/")
    return process, "".join(lines)


def wait_for(url):
    for _ in range(100):
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


def stop(process):
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=60)
    return out


def half_sent_request(port):
    """A client that sends its headers and half its body, then waits."""
    body = json.dumps({"name": "pageview", "url": "https://example.com/", "domain": "example.com"}).encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(
        b"POST /api/event HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 Firefox/128.0\r\n"
        b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body[: len(body) // 2]
    )
    return s


def raw_post(port, path, body: bytes) -> bytes:
    """POST with Transfer-Encoding: chunked (urllib cannot), in two chunks."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        half = len(body) // 2
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:half], body[half:])) + b"0\r\n\r\n"
        s.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 Firefox/128.0\r\n".encode()
            + b"Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            + chunks
        )
        s.settimeout(10)
        answer = b""
        while data := s.recv(65536):
            answer += data
        return answer


def call(url, data=None, key=None, content_type="application/json"):
    request = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    if data is not None:
        request.add_header("Content-Type", content_type)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    request.add_header("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read()


def test_make_run_serves_ingest_and_stats_and_stops_cleanly(tmp_path):
    port = free_port()
    process, banner = start(tmp_path, port)
    try:
        assert re.search(r"admin login: admin / \S+", banner)
        assert (tmp_path / "redis.url").exists()
        # The embedded server asks for a password (kept 0600 under var/) and is bounded by a
        # maxmemory that refuses writes rather than evicting counts.
        import redis as redis_py

        url = (tmp_path / "redis.url").read_text().strip()
        password = (tmp_path / "redis-password").read_text().strip()
        assert password in url and password not in banner
        assert (tmp_path / "redis-password").stat().st_mode & 0o077 == 0
        with pytest.raises(redis_py.exceptions.AuthenticationError):
            redis_py.Redis.from_url(url.replace(f":{password}@", "")).ping()
        limits = redis_py.Redis.from_url(url).config_get("maxmemory*")
        assert int(limits["maxmemory"]) > 0 and limits["maxmemory-policy"] == "noeviction"
        out = subprocess.run(
            [sys.executable, "manage.py", "addsite", "example.com"],
            cwd=BASE,
            env={**os.environ, "TALLY_VAR_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            check=True,
        )
        key = out.stdout.strip().splitlines()[-1]
        events = [{"url": f"https://example.com/p{n % 7}", "visitor": f"v{n % 1500}"} for n in range(3000)]
        status, body = call(f"http://127.0.0.1:{port}/api/v1/events", json.dumps(events).encode(), key)
        assert status == 200 and json.loads(body)["accepted"] == 3000
        status, body = call(
            f"http://127.0.0.1:{port}/api/event",
            json.dumps({"name": "pageview", "url": "https://example.com/", "domain": "example.com"}).encode(),
            content_type="text/plain",
        )
        assert (status, body) == (202, b"ok")
        status, body = call(f"http://127.0.0.1:{port}/api/v1/stats/timeseries?site=example.com", key=key)
        today = json.loads(body)["results"][-1]
        assert today["pageviews"] == 3001 and today["dau"] == 1501
        assert abs(today["visitors"] - 1501) <= hll_tolerance(1501)

        # Slow clients cannot stall it: half-sent bodies hold no worker (WEB_WORKERS=1 here).
        stalls = [half_sent_request(port) for _ in range(4)]
        started = time.monotonic()
        status, _ = call(
            f"http://127.0.0.1:{port}/api/event",
            json.dumps({"name": "pageview", "url": "https://example.com/q", "domain": "example.com"}).encode(),
            content_type="text/plain",
        )
        assert status == 202 and time.monotonic() - started < 5
        for stall in stalls:
            stall.close()

        # Static files go out compressed, under hashed names cached for a year.
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=10).read().decode()
        css = re.search(r'href="(/static/tally\.[0-9a-f]{12}\.css)"', page).group(1)
        request = urllib.request.Request(f"http://127.0.0.1:{port}{css}", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.headers["Content-Encoding"] == "gzip"
            max_age = int(re.search(r"max-age=(\d+)", response.headers["Cache-Control"]).group(1))
            assert max_age >= 365 * 86400 and "immutable" in response.headers["Cache-Control"]

        # The dashboard's Plotly bundle and the map's outlines: plotly.js asks for
        # <topojsonURL>world_110m.json, a plain name, in the folder the page names.
        out = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "shell",
                "-c",
                "from analytics.models import Site; print(Site.objects.get(domain='example.com').enable_sharing())",
            ],
            cwd=BASE,
            env={**os.environ, "TALLY_VAR_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            check=True,
        )
        page = (
            urllib.request.urlopen(f"http://127.0.0.1:{port}/share/{out.stdout.strip().splitlines()[-1]}/", timeout=10)
            .read()
            .decode()
        )
        bundle = re.search(r'src="(/static/vendor/plotly-tally\.min\.[0-9a-f]{12}\.js)"', page).group(1)
        folder = re.search(r'data-topojson-url="([^"]+)"', page).group(1)
        for url in (bundle, folder + "world_110m.json"):
            request = urllib.request.Request(f"http://127.0.0.1:{port}{url}", headers={"Accept-Encoding": "gzip"})
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.status == 200 and response.headers["Content-Encoding"] == "gzip", url
                body = gzip.decompress(response.read())
        assert "countries" in json.loads(body)["objects"]

        # Chunked and gzip bodies are read.
        chunked = raw_post(
            port,
            "/api/event",
            json.dumps({"name": "pageview", "url": "https://example.com/c", "domain": "example.com"}).encode(),
        )
        assert chunked.startswith(b"HTTP/1.1 202"), chunked
        events = [{"url": "https://example.com/z", "visitor": f"z{n}"} for n in range(100)]
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/v1/events", data=gzip.compress(json.dumps(events).encode()), method="POST"
        )
        for name, value in (
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
            ("Authorization", f"Bearer {key}"),
        ):
            request.add_header(name, value)
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read())["accepted"] == 100

        # The embedded Redis dies: the runner starts it again on the same port, data intact.
        url = (tmp_path / "redis.url").read_text()
        os.kill(int((tmp_path / "redis" / "redis.pid").read_text()), signal.SIGKILL)
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = call(f"http://127.0.0.1:{port}/api/v1/stats/timeseries?site=example.com", key=key)
                if status == 200:
                    break
            except urllib.error.HTTPError as e:
                assert e.code == 503  # storage down for a moment: JSON 503, never a 500
            assert time.monotonic() < deadline, "Redis did not come back"
            time.sleep(0.2)
        assert (tmp_path / "redis.url").read_text() == url
        # Every acknowledged event is counted once. One a drainer had claimed when Redis
        # died is counted once that drainer gives its claim up on its next pass (or the
        # lease ends): a read right after the restart may come before that, so this waits
        # for the count, and then checks it is not more either.
        expected, deadline = 3001 + 1 + 1 + 100, time.monotonic() + inbox.LEASE_MS / 1000 + 30
        while json.loads(body)["results"][-1]["pageviews"] < expected and time.monotonic() < deadline:
            time.sleep(0.5)
            status, body = call(f"http://127.0.0.1:{port}/api/v1/stats/timeseries?site=example.com", key=key)
        assert json.loads(body)["results"][-1]["pageviews"] == expected
        dau = json.loads(body)["results"][-1]["dau"]
        assert dau == 1501 + 1 + 100  # (the chunked request came with another User-Agent)
    except BaseException:
        print(stop(process))  # the runner's own account, shown with the failure
        raise
    finally:
        out = stop(process) if process.poll() is None else ""
    assert "stopped" in out, out
    assert "redis exited with code -9; starting it again" in out
    assert process.returncode == 0
    assert not (tmp_path / "redis.url").exists()
    assert list((tmp_path / "redis").glob("appendonly*"))

    # Nothing under var/ is readable by other users (but the public static files).
    loose = [p for p in tmp_path.rglob("*") if "static" not in p.parts and p.stat().st_mode & 0o077]
    assert loose == []

    # Data survives a restart: Redis replays its append-only file.
    process, banner = start(tmp_path, port)
    password = (tmp_path / "admin-password").read_text().strip()
    assert password not in banner and "the password is in" in banner  # shown on the first start only
    try:
        status, body = call(f"http://127.0.0.1:{port}/api/v1/stats/timeseries?site=example.com&metrics=dau", key=key)
        assert json.loads(body)["results"][-1]["dau"] == dau
    finally:
        stop(process)


def test_the_bundles_build_recipe_is_not_published(tmp_path, settings):
    """static/vendor/build/ (package.json, lock file, build.sh) stays out of the collected files."""
    from django.core.management import call_command

    settings.STATIC_ROOT = tmp_path
    call_command("collectstatic", "--noinput", verbosity=0)
    assert (tmp_path / "vendor" / "topojson" / "world_110m.json").exists()
    assert not (tmp_path / "vendor" / "build").exists()
