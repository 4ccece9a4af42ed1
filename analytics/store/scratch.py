"""Scratch keys: where multi-key results (BITOP, PFMERGE) land for a moment.

A job names its temporary keys through one `Scratch`; each carries a TTL before it is
used, and all are unlinked when the job ends, even when it fails, so a crashed process
leaves nothing behind for long.
"""

import secrets
from contextlib import contextmanager

import redis

from . import keys

OR_CHUNK = 16  # Redis 6.2 runs BITOP over more than 16 keys ~4x slower: OR in chunks
SCRATCH_TTL_MS = 10 * 60 * 1000


class Scratch:
    """Names for one job's temporary keys, all unlinked when the job ends."""

    def __init__(self, r: redis.Redis, site_id: int):
        self.r = r
        self.site_id = site_id
        self.token = secrets.token_hex(6)
        self.made: set[str] = set()

    def key(self, name: str) -> str:
        made = keys.temporary(self.site_id, self.token, name)
        self.made.add(made)
        return made

    def cleanup(self):
        made = list(self.made)
        for i in range(0, len(made), 500):
            self.r.unlink(*made[i : i + 500])


@contextmanager
def scratch(r: redis.Redis, site_id: int):
    s = Scratch(r, site_id)
    try:
        yield s
    finally:
        s.cleanup()


def queue_union(pipe, dest: str, sources: list[str], ttl_ms: int = SCRATCH_TTL_MS):
    """Queue BITOP OR of `sources` into `dest`, at most 16 keys per BITOP."""
    pipe.bitop("OR", dest, *sources[:OR_CHUNK])
    rest = sources[OR_CHUNK:]
    for i in range(0, len(rest), OR_CHUNK - 1):
        pipe.bitop("OR", dest, dest, *rest[i : i + OR_CHUNK - 1])
    pipe.pexpire(dest, ttl_ms)
