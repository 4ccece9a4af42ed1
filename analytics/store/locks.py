"""A Redis lock per site and job kind, so a job never runs twice at once.

`SET key token NX PX ttl` takes it; only the owner releases it (Lua compare-and-delete)
or renews it (compare-and-pexpire). While a job runs, a watchdog thread renews the lock
every third of its TTL, so a slow job keeps it and a dead worker's lock frees itself when
the TTL runs out. A job that cannot take the lock skips: the holder is doing its work.
"""

import contextlib
import logging
import secrets
import threading

import redis

from .scripts import LOCK_RELEASE, LOCK_RENEW

log = logging.getLogger(__name__)


class Lock:
    def __init__(self, r: redis.Redis, key: str, ttl_ms: int = 60_000):
        self.r = r
        self.key = key
        self.ttl_ms = ttl_ms
        self.token = secrets.token_hex(16)
        self._stop = threading.Event()
        self._watchdog: threading.Thread | None = None
        self.lost = False  # set when a renewal found the lock gone or someone else's

    def acquire(self) -> bool:
        return bool(self.r.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def renew(self) -> bool:
        return bool(LOCK_RENEW.run(self.r, [self.key], [self.token, self.ttl_ms]))

    def release(self) -> bool:
        self._stop.set()
        if self._watchdog is not None:
            self._watchdog.join()
        return bool(LOCK_RELEASE.run(self.r, [self.key], [self.token]))

    def start_watchdog(self):
        self._watchdog = threading.Thread(target=self._renew_until_stopped, name=f"lock-{self.key}", daemon=True)
        self._watchdog.start()

    def _renew_until_stopped(self):
        interval = self.ttl_ms / 3000
        while not self._stop.wait(interval):
            try:
                if not self.renew():
                    self.lost = True
                    log.warning("lost lock %s", self.key)
                    return
            except redis.exceptions.RedisError:
                log.exception("could not renew lock %s; will retry", self.key)


@contextlib.contextmanager
def held(r: redis.Redis, key: str, ttl_ms: int = 60_000):
    """Yields the Lock when taken (renewed until the block ends), or None when another
    holder has it: the caller skips its job then."""
    lock = Lock(r, key, ttl_ms)
    if not lock.acquire():
        yield None
        return
    lock.start_watchdog()
    try:
        yield lock
    finally:
        lock.release()
