"""Rate limits: GCRA buckets in Redis (scripts/lib/gcra.lua), the redis-cell idea.

A bucket lets `burst` requests through at once and then one every `60 / per_minute`
seconds; its state is one short-lived string (the "theoretical arrival time"), so an
idle client costs nothing. Ingestion checks its buckets inside its own Lua call (one
round trip per request); everything else calls `throttle()`.
"""
import math
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
