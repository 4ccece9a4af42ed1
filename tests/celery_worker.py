"""A real Celery worker for the tests that are about workers (solo pool, quiet)."""

import subprocess
import sys
from pathlib import Path

BASE = Path(__file__).resolve().parent.parent


def start_worker(env: dict, loglevel: str = "warning") -> subprocess.Popen:
    return subprocess.Popen(
        [
            str(Path(sys.executable).parent / "celery"),
            "--app",
            "config",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            loglevel,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=BASE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
