"""Rate limits: GCRA buckets in Redis (scripts/lib/gcra.lua), the redis-cell idea.

A bucket lets `burst` requests through at once and then one every `60 / per_minute`
seconds; its state is one short-lived string (the "theoretical arrival time"), so an
idle client costs nothing. Ingestion checks its buckets inside its own Lua call (one
round trip per request); everything else calls `throttle()`.

While Redis is out of reach the buckets cannot be read, and ingest spools what it accepts:
from the first failure until the next success (`outage_seen()`), `throttle_locally()`
charges the same buckets in this process's memory (each worker its own: a limit is at most
that many times looser, never off) before the write is tried, so one client cannot fill
the spool at will, and a refused event is one Redis never saw (a write that timed out may
have been applied: it is spooled under its mark, never refused after the fact).
"""

import math
import threading
import time
from dataclasses import dataclass

import redis

from .scripts import THROTTLE


@dataclass(frozen=True)
class Rate:
    per_minute: float
    burst: int

    @property
    def interval_ms(self) -> float:
        return 60_000 / self.per_minute


@dataclass(frozen=True)
class Bucket:
    key: str
    rate: Rate
    cost: int = 1
    # The cost is that many requests, each of which would have been charged alone (group
    # commit's events): all must fit at once. Otherwise a cost over the burst (a batch) goes
    # through when there is room for one, and leaves the bucket in debt (lib/gcra.lua).
    separate: bool = False

    def args(self) -> list:
        return [repr(self.rate.interval_ms), self.rate.burst, -self.cost if self.separate else self.cost]


class Limited(Exception):
    """Over a rate limit; `retry_after` is in whole seconds (for the Retry-After header)."""

    def __init__(self, wait_ms: float, what: str = "rate limit"):
        self.retry_after = max(1, math.ceil(wait_ms / 1000))
        super().__init__(f"{what} exceeded; retry in {self.retry_after} s")


def throttle(r: redis.Redis, buckets: list[Bucket], what: str = "rate limit"):
    """Charge every bucket, or none and raise Limited."""
    if not buckets:
        return
    args = [a for bucket in buckets for a in bucket.args()]
    wait = THROTTLE.run(r, [bucket.key for bucket in buckets], args)
    if wait:
        raise Limited(wait, what)


_local: dict[str, float] = {}  # bucket key -> theoretical arrival time (ms, monotonic clock)
_local_lock = threading.Lock()
LOCAL_KEYS = 100_000  # past this many buckets, the empty ones are dropped


def throttle_locally(buckets: list[Bucket], what: str = "rate limit"):
    """throttle() against this process's memory, the same GCRA (lib/gcra.lua): charge every
    bucket, or none and raise Limited."""
    if not buckets:
        return
    now = time.monotonic() * 1000
    with _local_lock:
        wait = 0.0
        for b in buckets:
            interval = b.rate.interval_ms
            tat = max(_local.get(b.key, now), now)
            need = b.cost if b.separate else 1  # (as Bucket.args() tells lib/gcra.lua)
            wait = max(wait, tat + need * interval - b.rate.burst * interval - now)
        if wait > 0:
            raise Limited(wait, what)
        for b in buckets:
            _local[b.key] = max(_local.get(b.key, now), now) + abs(b.cost) * b.rate.interval_ms
        if len(_local) > LOCAL_KEYS:
            for key in [key for key, tat in _local.items() if tat <= now]:
                del _local[key]


_outage = threading.Event()


def outage_seen(seen: bool | None = None) -> bool:
    """Whether this process's last write found Redis out (set it with `seen`)."""
    if seen is True:
        _outage.set()
    elif seen is False and _outage.is_set():
        _outage.clear()
    return _outage.is_set()
