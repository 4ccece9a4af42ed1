"""`make bench`: Tally's ingestion throughput beside references measured in the same run.

Everything runs against one fresh server started here, the one tests and `make run` use
(TALLY_REDIS_SERVER: redis6, valkey, redis8 or a path; the tables name it):

* the engine alone (no HTTP): `ingest.record()` on validated hits, and validation + record
  from the raw JSON body, in 1,000-event batches;
* the ingest script's own time in Redis (INFO commandstats) by events per call, 1 to
  1,000: what a single event costs Redis, and what group commit and batches share;
* the same script section by section (bench/script_sections.py: os.clock() at the
  `--@section` marks of its Lua sources), for calls of 1 and of 1,000 events;
* the references: a bare redis-py pipeline doing the same kind of writes per event, and
  Doist's bitmapist `mark_event` (per call, and pipelined 1,000 calls at a time) in its
  own virtualenv (it pins redis-py < 6);
* over HTTP, one worker per core and wrk on the same two cores: 1,000-event batches to
  `/api/v1/events` and single events to `/api/event` at 8, 16 and 32 connections, Tally
  served as `make run` serves it (granian's RSGI + server/front.py) and, as the "before" row, on gunicorn sync workers, each
  beside a bare WSGI app doing a plain redis-py pipeline per request on gunicorn sync
  workers (bench/reference_app.py).

Numbers are ratios to read side by side, not thresholds: this machine is noisy.
Environment: BENCH_SECONDS (wrk duration, default 10), BENCH_EVENTS (engine events per
measurement, default 100000), TALLY_REDIS_SERVER. To compare servers, run the sections
that depend on them once per server, e.g. `BENCH_ONLY=ingest,rollup,dimensions
TALLY_REDIS_SERVER=valkey make bench`, and read the tables side by side.
"""

import json
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

BASE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE))
sys.path.insert(0, str(BASE / "bench"))
VAR = BASE / "var" / "bench"
VAR.mkdir(parents=True, exist_ok=True)
os.environ["TALLY_VAR_DIR"] = str(VAR)
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")  # the dashboard bench uses the test client

import script_sections  # noqa: E402

from tests.redis_server import RedisServer, free_port  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
ONLY = {part.strip() for part in os.environ.get("BENCH_ONLY", "").split(",") if part.strip()}


def want(section: str) -> bool:
    """BENCH_ONLY=ingest,bots,peers,size,rollup,dashboard,bloom,import,quota,dimensions runs just those sections."""
    return not ONLY or section in ONLY


EVENTS = int(os.environ.get("BENCH_EVENTS", "100000"))
PEERS_EVENTS = int(os.environ.get("BENCH_PEERS_EVENTS", "1000000"))  # the peers section's stream (issue 38)
# Single events at three loads: the p99 grows with the connections (the bare reference's
# too: ~13 ms at 32), so the target "1.5x with p99 <= 10 ms" is read on each row.
SINGLE_RUNS = (("single", 8), ("single16", 16), ("single32", 32))
BATCH = 1000
VISITORS = 50_000
DOMAIN = "bench.example"
rows: list[tuple[str, str, str]] = []


def say(message):
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def batch_events(rng: random.Random, pages: int, n: int = BATCH) -> list[dict]:
    """Events over a heavy-tailed set of pages (a few popular, many rare) from a pool of
    returning visitors, each with the demo's realistic mixes of User-Agents, referrers and
    campaigns, and a public address (so every visit dimension is worked out and stored)."""
    from analytics.management.commands.demo import AGENTS, REFERRERS

    agents, agent_weights = [a for _, a in AGENTS], [w for w, _ in AGENTS]
    referrers, referrer_weights = [(r, q) for _, r, q in REFERRERS], [w for w, _, _ in REFERRERS]
    events = []
    for _ in range(n):
        v = rng.randrange(VISITORS)
        referrer, query = rng.choices(referrers, referrer_weights)[0]
        events.append(
            {
                "url": f"https://{DOMAIN}/page/{int(pages ** rng.random())}{query}",
                "visitor": f"v{v}",
                "user_agent": agents[v % 97 % len(agents)] if v % 5 else rng.choices(agents, agent_weights)[0],
                "ip": _home(v),
                "referrer": referrer,
            }
        )
    return events


def _home(v: int) -> str:
    """Visitor v's address: a public one outside every data-centre range (ingest would drop
    those as bots since issue 37, and a dropped event costs the engine nothing)."""
    from analytics.ingest.datacenters import is_datacenter

    for n in range(256):
        ip = f"{(v * 7919 + n * 104729) % 223 + 1}.{v % 251}.{(v >> 8) % 256}.{v % 254 + 1}"
        if not is_datacenter(ip):
            return ip
    raise ValueError(f"no home address for visitor {v}")


def timed(fn, events: int) -> float:
    start = time.perf_counter()
    fn()
    return events / (time.perf_counter() - start)


def hits_of(body: bytes, now: datetime, site) -> list:
    """A batch body's events validated and checked into hits, as the batch endpoint does."""
    from analytics.api.ingest import _parse_batch, batch_hits

    items, rejected = _parse_batch(body)
    return [hit for _, hit in batch_hits(site, items, now, rejected)]


def engine(r, site, pages: int):
    import orjson

    from analytics.ingest import record

    rng = random.Random(pages)
    bodies = [orjson.dumps(batch_events(rng, pages)) for _ in range(EVENTS // BATCH)]
    now = datetime.now(UTC)
    prepared = [hits_of(body, now, site) for body in bodies]
    distinct_pages = sum(len({h.path for h in hits}) for hits in prepared) / len(prepared)
    for hits in prepared[:5]:  # warm up: scripts loaded, HLLs past their sparse phase
        record(r, site, hits, now=now)
    record_only = timed(lambda: [record(r, site, hits, now=now) for hits in prepared], EVENTS)
    with_validation = timed(lambda: [record(r, site, hits_of(body, now, site), now=now) for body in bodies], EVENTS)
    return record_only, with_validation, distinct_pages, bodies


def script_cost(r, site, bodies) -> list[tuple]:
    """Redis's own time running the ingest script (INFO commandstats, so no client or
    network time), per call and per event, by events per call: what one single event
    costs Redis alone, and how much of it a group (group commit) or a batch shares. The
    events are the engine's (returning visitors mixed with new ones, every dimension)."""
    import importlib

    record = importlib.import_module("analytics.ingest.record")  # (the package exports a function of that name)
    hits = [hit for body in bodies for hit in hits_of(body, datetime.now(UTC), site)]
    out = []
    for size, prepared in script_sections.prepared_groups(r, site, hits, ((1, 1000), (4, 500), (16, 250), (BATCH, 20))):
        r.config_resetstat()
        for p in prepared:
            record.execute(r, [p])
        stats = r.info("commandstats")["cmdstat_evalsha"]
        per_call = stats["usec"] / stats["calls"]
        out.append((f"{size:,}", f"{per_call:,.0f}", f"{per_call / size:,.1f}", fmt(1e6 * size / per_call)))
    return out


def pipeline_reference(r, bodies) -> float:
    """What a straightforward redis-py program does: one pipeline per 1,000 events, the
    writes of each event sent as their own commands (ids assumed dense already)."""
    import orjson

    batches = [orjson.loads(body) for body in bodies]
    day = datetime.now(UTC).date().isoformat()

    def run():
        for events in batches:
            pipe = r.pipeline(transaction=False)
            for e in events:
                visitor = e["visitor"]
                page = e["url"]
                pipe.pfadd(f"ref:{{1}}:uv:{day}", visitor)
                pipe.pfadd(f"ref:{{1}}:uv:{day}:{page}", visitor)
                pipe.incrby(f"ref:{{1}}:pv:{day}", 1)
                pipe.incrby(f"ref:{{1}}:pv:{day}:{page}", 1)
                pipe.setbit(f"ref:{{1}}:active:{day}", int(visitor[1:]), 1)
            pipe.execute()

    return timed(run, len(batches) * BATCH)


def round_trips(r) -> float:
    """Calibration: one INCR per round trip (MEASUREMENTS.md saw ~72k/s on its machine)."""
    r.set("calibrate", 0)
    return timed(lambda: [r.incr("calibrate") for _ in range(5000)], 5000)


def bitmapist_reference(url: str) -> dict | None:
    venv = VAR / "bitmapist-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        say("creating the bitmapist virtualenv (once)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-r", str(BASE / "bench" / "requirements-bitmapist.txt")],
            check=True,
        )
    out = subprocess.run(
        [str(python), str(BASE / "bench" / "bitmapist_reference.py"), url, str(EVENTS), str(BATCH)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def setup_site():
    import django

    django.setup()
    from django.core.management import call_command

    from analytics.models import Site
    from analytics.sites import SiteInfo

    call_command("migrate", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)  # (pages name static files through the manifest)
    Site.objects.filter(domain=DOMAIN).delete()
    site = Site.objects.create(domain=DOMAIN)
    return SiteInfo.from_model(site), site.create_api_key("bench")


class _WithDrainer:
    """granian and the inbox drainer beside it, as `make run` starts them: stopped together."""

    def __init__(self, web: subprocess.Popen, drainer: subprocess.Popen):
        self.web, self.drainer = web, drainer

    def terminate(self):
        self.web.terminate()
        self.web.wait(10)
        self.drainer.terminate()

    def kill(self):
        self.web.kill()
        self.drainer.kill()

    def wait(self, timeout=None):
        self.web.wait(timeout)
        return self.drainer.wait(timeout)


def start_server(app: str, redis_url: str, server: str = "gunicorn") -> tuple[subprocess.Popen, str]:
    """gunicorn with sync workers (the reference app; Tally before it had its own front), or
    granian serving server.front with `manage.py drain_inboxes` beside it (Tally as
    `make run` serves it), one worker per core."""
    port = free_port()
    env = dict(
        os.environ,
        REDIS_URL=redis_url,
        TRUSTED_PROXIES="127.0.0.1",
        ALLOWED_HOSTS="127.0.0.1",
        PYTHONPATH=f"{BASE}:{BASE / 'bench'}",
        TALLY_INBOX_DRAINER="process",
    )
    workers = os.environ.get("BENCH_WORKERS") or str(os.cpu_count() or 2)
    if server == "granian":
        command = [
            str(Path(sys.executable).parent / "granian"),
            "--interface",
            "rsgi",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            workers,
            "--log-level",
            "warning",
            "--no-ws",
            "--loop",
            "uvloop",
            *os.environ.get("BENCH_GRANIAN_ARGS", "").split(),
            app,
        ]
    else:
        command = [
            str(Path(sys.executable).parent / "gunicorn"),
            app,
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            workers,
            "--worker-class",
            "sync",
            "--log-level",
            "warning",
            "--backlog",
            "2048",
        ]
    process = subprocess.Popen(command, cwd=BASE, env=env)
    if server == "granian":
        process = _WithDrainer(
            process, subprocess.Popen([sys.executable, str(BASE / "manage.py"), "drain_inboxes"], cwd=BASE, env=env)
        )
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/nope", timeout=1)
        except urllib.error.HTTPError:
            break
        except OSError:
            time.sleep(0.1)
    else:
        process.kill()
        raise RuntimeError(f"{server} {app} did not start")
    return process, f"http://127.0.0.1:{port}"


def wrk(url: str, script: str, args: list[str], connections: int, seconds: int = SECONDS) -> dict:
    cmd = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "5s",
        "-s",
        str(BASE / "bench" / "wrk" / script),
        url,
        "--",
        *args,
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    result = json.loads(line[len("RESULT ") :])
    result["per_second"] = result["requests"] / (result["duration_us"] / 1e6)
    return result


class LiveDashboards:
    """n open server-sent-event streams on the ASGI live server, each read by a thread,
    as n dashboard tabs would hold them."""

    def __init__(self, url: str, n: int):
        import http.client
        import threading
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.connections, self.events, self.threads = [], [0] * n, []
        for i in range(n):
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
            conn.request("GET", parts.path)
            response = conn.getresponse()
            assert response.status == 200, response.status
            self.connections.append(conn)
            thread = threading.Thread(target=self._read, args=(i, response), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _read(self, i, response):
        try:
            for line in response:
                if line.startswith(b"data:"):
                    self.events[i] += 1
        except (OSError, ValueError, AttributeError):  # closed under the reader at the end
            pass

    def close(self):
        import socket

        for conn in self.connections:  # shut the sockets first: a reader blocked in recv holds the file's lock
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self.threads:
            thread.join(5)
        for conn in self.connections:
            conn.close()


def start_live_server(redis_url: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = dict(os.environ, REDIS_URL=redis_url, ALLOWED_HOSTS="127.0.0.1", PYTHONPATH=str(BASE))
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "uvicorn"),
            "config.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-access-log",
            "--log-level",
            "warning",
        ],
        cwd=BASE,
        env=env,
    )
    import socket

    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.05)
    return process, f"http://127.0.0.1:{port}"


def http(redis_url: str, key: str, bodies: list[bytes]) -> dict:
    if not shutil.which("wrk"):
        say("wrk is not installed (apt-get install wrk): skipping the HTTP measurements")
        return {}
    body_dir = VAR / "bodies"
    body_dir.mkdir(exist_ok=True)
    files = []
    for n, body in enumerate(bodies[:20]):
        path = body_dir / f"batch-{n}.json"
        path.write_bytes(body)
        files.append(str(path))
    results = {}
    servers = (
        ("tally", "server.front:application", "granian"),
        ("tally-sync", "config.wsgi:application", "gunicorn"),
        ("reference", "reference_app:application", "gunicorn"),
    )
    for name, app, server in servers:
        process, url = start_server(app, redis_url, server)
        try:
            batch_url = url + "/api/v1/events"
            wrk(batch_url, "batch.lua", [key, *files], connections=4, seconds=1)  # warm up: imports, pools, threads
            wrk(url, "single.lua", [DOMAIN, "200"], connections=8, seconds=1)
            say(f"{name}: batches over HTTP for {SECONDS}s")
            results[name, "batch"] = wrk(batch_url, "batch.lua", [key, *files], connections=4)
            for kind, connections in SINGLE_RUNS:
                say(f"{name}: single events over HTTP for {SECONDS}s, {connections} connections")
                calls_before = _script_calls(redis_url)
                results[name, kind] = wrk(url, "single.lua", [DOMAIN, "200"], connections=connections)
                results[name, kind]["drain_s"] = _drain_tail(redis_url)
                results[name, kind]["script_calls"] = _script_calls(redis_url) - calls_before
            if name == "tally":
                from analytics.models import Site

                token = Site.objects.get(domain=DOMAIN).enable_sharing()
                live, live_url = start_live_server(redis_url)
                half = max(2, SECONDS // 2)
                rounds = {"batch": ([], []), "single": ([], [])}
                events = 0
                try:
                    # Alternate short runs without and with the dashboards open, so the
                    # machine's drift over the minutes hits both sides alike.
                    for round_ in range(3):
                        say(f"tally: round {round_ + 1}/3 without, then with 20 live dashboards ({half}s runs)")
                        for kind, script, args, conns in (
                            ("batch", "batch.lua", [key, *files], 4),
                            ("single", "single.lua", [DOMAIN, "200"], 8),
                        ):
                            target = batch_url if kind == "batch" else url
                            rounds[kind][0].append(wrk(target, script, args, conns, seconds=half)["per_second"])
                            dashboards = LiveDashboards(f"{live_url}/live/share/{token}", 20)
                            try:
                                rounds[kind][1].append(wrk(target, script, args, conns, seconds=half)["per_second"])
                            finally:
                                dashboards.close()
                                events += sum(dashboards.events)
                    results["live"] = rounds
                    results["live-events"] = events
                finally:
                    live.terminate()
                    live.wait(10)
        finally:
            process.terminate()
            process.wait(10)
    return results


def _drain_tail(redis_url: str) -> float:
    """Seconds from the end of a run until the inboxes hold no event (capture/inbox.py): the
    events acknowledged but not yet counted when wrk stopped. The table's "counted/s"
    divides by the run plus this tail, so a backlog cannot pass for speed."""
    import redis

    from analytics.models import Site
    from analytics.store import keys

    sid = Site.objects.get(domain=DOMAIN).pk
    waiting = [keys.inbox(sid), keys.inbox_claim(sid)[1]]
    client = redis.Redis.from_url(redis_url)
    start = time.perf_counter()
    try:
        while sum(client.llen(key) for key in waiting):
            time.sleep(0.005)
        return time.perf_counter() - start
    finally:
        client.close()


def _script_calls(redis_url: str) -> int:
    """EVALSHA calls the server has run so far (INFO commandstats): with the requests a run
    made, the script calls an event took (with the inbox: its share of a push, and of a
    drain's claim, record() and release)."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        return client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
    finally:
        client.close()


def dashboard_section(r):
    import dashboard_bench

    from analytics.models import Site

    Site.objects.filter(domain="dashboard.example").delete()
    site = Site.objects.create(domain="dashboard.example")
    return dashboard_bench.run(r, site, say), first_draw(site)


def first_draw(site) -> list[tuple]:
    """The same site's dashboard drawn in a fresh browser, served as `make run` serves it."""
    import first_draw_bench
    from django.conf import settings

    token = site.enable_sharing()
    full = first_draw_bench.full_bundle(Path(settings.STATIC_ROOT))  # (before the server scans the files)
    process, url = start_server("server.front:application", os.environ["REDIS_URL"], "granian")
    try:
        return first_draw_bench.run(url, token, full, say)
    finally:
        process.terminate()
        process.wait(10)


def rollup_section(r):
    import rollup_bench

    from analytics.models import Site

    Site.objects.filter(domain="rollup.example").delete()
    site = Site.objects.create(domain="rollup.example")
    return rollup_bench.run(r, site, say)


def table(title: str, header: tuple, lines: list[tuple]):
    widths = [max(len(str(x)) for x in column) for column in zip(header, *lines)]
    print(f"\n{title}")
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for line in lines:
        print("  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(line, widths))))


def fmt(rate: float) -> str:
    return f"{rate:,.0f}"


def main():
    with RedisServer() as server:
        import redis

        os.environ["REDIS_URL"] = server.url
        r = redis.Redis.from_url(server.url)
        say(f"{server.version}: {server.args[0]}")
        site, key = setup_site()
        from analytics.store import connection

        connection.reset()

        engine_rows, http_results, rollup_rows, dashboard_rows, bloom_rows, import_rows = {}, {}, [], [], [], []
        quota_rows, draw_rows, dimension_rows, model_rows, segment_rows = [], [], [], [], []
        junk_rows, bot_rows, eval_rows, peers, size_rows = [], [], [], {}, []
        if want("ingest"):
            say(f"engine: {EVENTS:,} events in {BATCH:,}-event batches, two page mixes")
            bodies_for_http = None
            for pages in (50, 1000):
                record_only, validated, distinct, bodies = engine(r, site, pages)
                engine_rows[pages] = (record_only, validated, distinct)
                if pages == 50:
                    bodies_for_http = bodies
            say("the ingest script's own Redis time by events per call")
            cost_rows = script_cost(r, site, bodies_for_http)
            say("the ingest script's time by section")
            section_table = script_sections.run(
                r, site, [hit for body in bodies_for_http for hit in hits_of(body, datetime.now(UTC), site)]
            )
            say("references: bare redis-py pipeline, bitmapist")
            calibration = round_trips(r)
            pipeline_rate = pipeline_reference(r, bodies_for_http)
            bitmapist = bitmapist_reference(server.url)
            r.execute_command("FLUSHALL", "SYNC")  # HTTP runs start from an empty Redis, like the engine ones did
            http_results = http(server.url, key, bodies_for_http)
        if want("bots"):
            import bot_checks_bench
            import orjson

            rng = random.Random(37)
            bodies = [orjson.dumps(batch_events(rng, 50)) for _ in range(max(EVENTS // BATCH // 2, 1))]
            bot_rows = bot_checks_bench.run(r, say, site, bodies)
            r.execute_command("FLUSHALL", "SYNC")
            import bot_eval

            eval_rows = bot_eval.run(say)
        if want("peers"):
            r.execute_command("FLUSHALL", "SYNC")
            from bench.peers import section

            peers = section.run(r, server.url, say, start_server, PEERS_EVENTS)
        if want("size"):
            import size_bench

            size_rows = size_bench.run(r, say)
        if want("rollup"):
            r.execute_command("FLUSHALL", "SYNC")
            rollup_rows = rollup_section(r)
        if want("dashboard"):
            r.execute_command("FLUSHALL", "SYNC")
            dashboard_rows, draw_rows = dashboard_section(r)
        if want("bloom"):
            r.execute_command("FLUSHALL", "SYNC")
            import bloom_bench

            bloom_rows = bloom_bench.run(r, say)
        if want("import"):
            r.execute_command("FLUSHALL", "SYNC")
            import import_bench

            from analytics.models import Site

            Site.objects.filter(domain="logs.example").delete()
            import_rows = import_bench.run(Site.objects.create(domain="logs.example"), say)
        if want("dimensions"):
            import dimensions_bench

            for size in dimensions_bench.SIZES:
                rows_, events_, visitors_, families_ = dimensions_bench.run(r, say, size)
                model_rows.append(dimensions_bench.model(visitors_, families_))
                segment_rows.append(dimensions_bench.segments_model(visitors_, families_))
                if size == dimensions_bench.VISITORS or not dimension_rows:
                    dimension_rows, dimension_events, dimension_visitors = rows_, events_, visitors_
        if want("quota"):
            import quota_bench

            quota_rows = quota_bench.run(r, say)
            junk_rows = quota_bench.worst_case(r, say)
    on = server.version  # every table below names the server it measured
    if engine_rows:
        print_ingest(engine_rows, bitmapist, pipeline_rate, calibration, http_results, on)
        table(
            f"The ingest script's own time in Redis (INFO commandstats), by events per call, {on}",
            ("events per call", "µs per call", "µs per event", "events/s of one Redis core"),
            cost_rows,
        )
        if section_table:
            for title, header, lines in section_table:
                table(f"{title}, {on}", tuple(header), lines)
            print_budgets(bitmapist, dict((line[0], line[1]) for line in section_table[-1][2]), engine_rows)
        else:
            print(f"\n(no table of the ingest script's sections: {on} scripts have no os.clock())")
    if bot_rows:
        table(
            f"Keeping bots out: the ingest cost of the checks (crawler User-Agents, data-centre addresses, referrer "
            f"spam, the site's exclusions, the rate screen) beside the same path without them; people's events, {on}",
            ("what", "events/s", "µs per event", "vs without"),
            bot_rows,
        )
    if peers:
        table(
            f"Peers: Tally's read API against ClickHouse as Plausible runs it (chdb, events_v2/sessions_v2, uniq), "
            f"the same {peers['events']:,} events ({peers['visitors']:,} visitors, 60 days), 30-day questions; ms in "
            f"this process (server time): Tally's first run with nothing kept, its first after the nightly warm-up, "
            f"the median of {section.WARM} more; error against the brute force, {on}",
            (
                "question",
                "Tally cold",
                "Tally first",
                "Tally ms",
                "CH first",
                "CH ms",
                "Tally ÷ CH",
                "floor ÷ CH",
                "Tally error",
                "CH error",
            ),
            peers["reads"],
        )
        print(
            f"floor: {peers['floor']:.1f} ms, a breakdown of a property no event has through the same API (auth, "
            "parameters, the runner, the stored days, JSON): the least any Tally answer here costs; a ratio below "
            "its column is out of this stack's reach"
        )
        table(
            f"Peers: writes, rollup and storage on the same events, {on}",
            ("what", "Tally", "ClickHouse", "Tally ÷ CH"),
            peers["writes"],
        )
    if size_rows:
        table(
            f"Writes and memory against the site's size: the peers' stream ({size_bench.EVENTS:,} events, "
            f"{size_bench.DAYS} days) into a site whose id map already holds that many visitors (bench/size_bench.py), "
            f"through the batch API in this process, {on}",
            (
                "visitors-ever",
                "events/s",
                "÷ empty site",
                "server CPU µs/event",
                "server MB after",
                "bytes/event the stream added",
                "of them: day bitmaps",
            ),
            size_rows,
        )
    if eval_rows:
        table(
            "What each cause dropped on a log of people and bots built from public data (bench/bot_eval.py): a real "
            "server's page views (elastic/examples apache_logs, 2015) beside traffic made from the vendored lists; "
            "events through the batch API",
            ("source", "events", "counted", *bot_eval.REASONS),
            eval_rows,
        )
    if dashboard_rows:
        table(
            f"Dashboard server time: 90-day period, 100,000 daily visitors (closed days from stored rows), {on}",
            ("what", "ms"),
            dashboard_rows,
        )
    if draw_rows:
        table(
            "Dashboard first draw in a fresh browser (30-day period, same site; median of 5, every chart drawn)",
            ("page", "Plotly bytes sent", "ms"),
            draw_rows,
        )
    if bloom_rows:
        table(
            f"Bloom filters (plain Redis, Lua): observed false positives over 100,000 unseen probes, memory, speed, {on}",
            (
                "filter",
                "false positives",
                "/ target",
                "bits/item (MEMORY USAGE)",
                "bits/item (formula)",
                "adds/s / checks/s",
            ),
            bloom_rows,
        )
    if import_rows:
        table(f"Access-log import, {on}", ("what", "lines/s", "time vs ceiling"), import_rows)
    if dimension_rows:
        table(
            f"{on} memory of one day with every visit dimension: {dimension_visitors:,} visitors, {dimension_events:,} pageviews",
            ("family", "keys", "MB", "bytes/visitor"),
            dimension_rows,
        )
    if model_rows:
        table(
            f"{on} memory model: one site, every visit dimension; a year with the default expiry (days kept 400 days; "
            "ids as if each day's visitors were new: an upper bound; open visits left out, they expire in 1.5 h)",
            (
                "daily visitors",
                "MB per site-day",
                "MB of ids per day",
                "GB/site-year, all days 400",
                "GB/site-year, defaults (page days 35 + folds, filter bitmaps 90)",
            ),
            model_rows,
        )
    if segment_rows:
        table(
            f"{on} filter bitmaps per site-day (the first 10 values of each dimension, pages and events: segment_values=10); "
            f"measured on a day of new visitors, modelled for a site that has seen {dimensions_bench.EVER_SEEN}x a day's "
            "visitors (a bitmap is as long as its highest id), kept 90 days (keep_segment_days)",
            (
                "daily visitors",
                "bitmaps",
                "MB measured",
                "bytes/visitor",
                f"MB/day at {dimensions_bench.EVER_SEEN}x ids",
                "GB/site-year",
            ),
            segment_rows,
        )
    if quota_rows:
        table(
            f"{on} memory per site-day: 100,000 pageviews on 100,000 distinct paths (one day), capped vs uncapped",
            ("daily page quota", "MB after ingest", "bytes/event", "keys", "rollup s", "MB after rollup"),
            quota_rows,
        )
    if junk_rows:
        table(
            f"{on} the worst an anonymous event costs: random paths, referrers, UTM tags, event names and ten random "
            "properties each, a new visitor each (the caps bound them; target: at most 400 bytes an event). The site-day "
            "after the second flood: the caps' worth of junk, plus what each new visitor keeps",
            (
                "flood",
                "MB after ingest",
                "bytes/event",
                "bytes/event once open visits expire",
                "site-day MB (visits closed)",
                "keys",
                "rollup s",
                "rows stored (event, page, dimension)",
            ),
            junk_rows,
        )
    import gzip

    tracker = (BASE / "static" / "tracker.js").read_bytes()
    table(
        "tracker.js",
        ("form", "bytes"),
        [("as served (hand-minified)", len(tracker)), ("gzipped", len(gzip.compress(tracker, 9)))],
    )
    if rollup_rows:
        table(
            f"Nightly rollup, {rollup_bench_visitors():,} visitors over 35 days (one site), {on}",
            ("what", "ms", "peak extra Redis MB"),
            rollup_rows,
        )
    print()


def print_ingest(engine_rows, bitmapist, pipeline_rate, calibration, http_results, on: str):
    lines = []
    for pages, (record_only, validated, distinct) in engine_rows.items():
        label = f"{pages} pages (~{distinct:.0f} distinct per batch)"
        lines.append(
            (
                f"Tally record(), validated hits — {label}",
                fmt(record_only),
                f"{record_only / bitmapist['pipelined']:.2f}x",
            )
        )
        lines.append(
            (
                f"Tally validate + record from JSON — {label}",
                fmt(validated),
                f"{validated / bitmapist['pipelined']:.2f}x",
            )
        )
    lines.append(
        (
            "ref: bare redis-py pipeline, 5 writes/event",
            fmt(pipeline_rate),
            f"{pipeline_rate / bitmapist['pipelined']:.2f}x",
        )
    )
    lines.append(("ref: bitmapist mark_event, 1,000 per pipeline", fmt(bitmapist["pipelined"]), "1.00x"))
    lines.append(
        (
            "ref: bitmapist mark_event, one call each",
            fmt(bitmapist["per_call"]),
            f"{bitmapist['per_call'] / bitmapist['pipelined']:.2f}x",
        )
    )
    lines.append(("calibration: redis-py INCR, one per round trip", fmt(calibration), ""))
    table(
        f"Engine alone (no HTTP), {BATCH:,}-event batches, events/s — one process, {on} on loopback",
        ("path", "events/s", "vs bitmapist pipelined"),
        lines,
    )
    if http_results:

        def row(label, result, ref, events=1):
            per_event = (
                f"{result['script_calls'] / (result['requests'] * events):.2f}" if result.get("script_calls") else ""
            )
            drain = result.get("drain_s", 0.0)
            counted = result["requests"] * events / (result["duration_us"] / 1e6 + drain)
            return (
                label,
                fmt(result["per_second"] * events),
                fmt(result["per_second"]),
                f"{result['per_second'] / ref['per_second']:.2f}x",
                fmt(counted),
                f"{drain:.2f}",
                f"{result['p50_us'] / 1000:.1f}",
                f"{result['p99_us'] / 1000:.1f}",
                result["errors"],
                result["non2xx"],
                per_event,
            )

        r = http_results
        lines = [
            row("Tally POST /api/v1/events, 1,000/batch, 4 conn.", r["tally", "batch"], r["reference", "batch"], BATCH),
            row(
                "Tally on gunicorn sync (before), 1,000/batch", r["tally-sync", "batch"], r["reference", "batch"], BATCH
            ),
            row(
                "ref: bare WSGI + redis-py pipeline, 1,000/batch",
                r["reference", "batch"],
                r["reference", "batch"],
                BATCH,
            ),
        ]
        for kind, connections in SINGLE_RUNS:
            lines += [
                row(f"Tally POST /api/event, 1 event, {connections} conn.", r["tally", kind], r["reference", kind]),
                row(
                    f"Tally on gunicorn sync (before), {connections} conn.", r["tally-sync", kind], r["reference", kind]
                ),
                row(
                    f"ref: bare WSGI + redis-py, 1 event, {connections} conn.",
                    r["reference", kind],
                    r["reference", kind],
                ),
            ]
        table(
            f"HTTP, {os.cpu_count()} workers (Tally: granian + its front, group commit on /api/event; refs: gunicorn sync), "
            f"wrk on the same cores, {SECONDS}s each, {on}",
            (
                "path",
                "events/s",
                "req/s",
                "vs ref",
                "counted/s",
                "drain s",
                "p50 ms",
                "p99 ms",
                "errors",
                "non-2xx",
                "script calls per event",
            ),
            lines,
        )
        import statistics

        rows = []
        for kind, label, scale in (
            ("batch", "POST /api/v1/events, events/s", BATCH),
            ("single", "POST /api/event, req/s", 1),
        ):
            without, with_ = http_results["live"][kind]
            rows.append(
                (
                    label,
                    " / ".join(fmt(x * scale) for x in without),
                    " / ".join(fmt(x * scale) for x in with_),
                    f"{statistics.median(with_) / statistics.median(without):.2f}",
                )
            )
        table(
            f"Ingestion with 20 live dashboards open (SSE on the ASGI server; {http_results['live-events']:,} events pushed), 3 alternating rounds",
            ("path", "without (3 runs)", "with 20 open (3 runs)", "median with / without"),
            rows,
        )


def print_budgets(bitmapist, commands: dict, engine_rows):
    """The engine targets (issues 12 and 14: 3x and 5x bitmapist pipelined) as time an event,
    beside what this run measured the engine's parts at: where the targets sit against the
    ingest script's commands alone."""
    per_event = 1e6 / bitmapist["pipelined"]
    record_only = max(rates[0] for rates in engine_rows.values())
    lines = [
        ("bitmapist pipelined, this run", f"{per_event:,.1f}"),
        ("  3x it (issue 12's engine target)", f"{per_event / 3:,.1f}"),
        ("  5x it (issue 14's engine target)", f"{per_event / 5:,.1f}"),
        ("Tally record(), the faster page mix, this run", f"{1e6 / record_only:,.1f}"),
        ("  of it, the ingest script's commands alone (1,000-event calls)", commands["all commands"]),
        (
            "  of it, the ingest script's own Lua work",
            commands["Lua's own work (the call's sections less its commands)"],
        ),
    ]
    table("The engine targets as time an event: budgets against parts", ("what", "us an event"), lines)


def rollup_bench_visitors():
    import rollup_bench

    return rollup_bench.VISITORS


if __name__ == "__main__":
    main()
