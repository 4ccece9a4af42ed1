"""A fair counting semaphore in Redis: at most `limit` holders across all workers, served
first come first served, and a holder that stops refreshing (a crashed worker) loses its
slot after `timeout` seconds. See scripts/semaphore.lua."""

import time

import redis

from . import keys
from .scripts import SEMAPHORE


class Semaphore:
    def __init__(self, r: redis.Redis, limit: int, timeout: float = 60.0):
        self.r, self.limit, self.timeout = r, limit, timeout
        self.keys = list(keys.export_semaphore())

    def acquire(self, token: str, now: float | None = None) -> int:
        """Join (or keep one's place in) the queue: 0 means the slot is ours, n > 0 means
        we are n-th in line. Call again to refresh, well within the timeout."""
        now = time.time() if now is None else now
        return int(SEMAPHORE.run(self.r, self.keys, ["acquire", token, self.limit, repr(now), repr(self.timeout)]))

    def release(self, token: str) -> bool:
        return bool(SEMAPHORE.run(self.r, self.keys, ["release", token, 0, 0, 0]))
