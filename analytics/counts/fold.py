"""A visit value's day bitmap folded into the day HLL it stands in for.

A visit value that got its bitmap on its first visitor of the day keeps no day HLL
(lib/segments.lua): the bitmap holds the same visitors, exactly, and a dense HLL is 12 KB
a value a day. Readers of one day count the bitmap (counts.dimensions.day_visitors(): a
bitmap with no HLL beside it is complete). Readers of a value over several days union
HLLs; where the value has a bitmap every day, queries/exact.py unions the bitmaps instead,
and the rest call ensure_hlls() first, which folds the bitmap-only days here, for good.
The site's HLLs count dense ids (record_batch.lua), so PFADD of the bitmap's set bits makes
the very HLL ingest would have made. A day's bitmaps expire before its HLLs would
(keep_segment_days against keep_daily_days), so the nightly rollup folds what is left
before then (rollups.expiry.fold_due()).

Folding beside ingest: a fold first moves the value from the day's bitmap-only set to its
folding set (SMOVE, atomic). From then on ingest adds new visitors to the HLL itself, and
readers still count the bitmap, since the HLL is not whole yet. Then the bitmap is read:
every visitor added before the move is in it. A fold cut short leaves the value in
folding: readers go on counting the bitmap, and the next fold finishes it (PFADD adds an
id once however often it is sent).
"""

import re
from collections.abc import Iterable
from datetime import date
from typing import cast

import redis

from ..store import keys

PFADD_CHUNK = 10_000  # ids per PFADD
READ_CHUNK = 1 << 20  # bitmap bytes per GETRANGE
_NONZERO = re.compile(rb"[^\x00]")
_OFFSETS = [tuple(k for k in range(8) if b & (0x80 >> k)) for b in range(256)]  # (bit 0 is a byte's highest)


def bitmap_only(r: redis.Redis, site_id: int, days: Iterable[date]) -> dict[date, set[str]]:
    """{day: the visit values with no whole day HLL}: bitmap-only, or being folded."""
    days = sorted(set(days))
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.smembers(keys.dimension_bitmap_only(site_id, day))
        pipe.smembers(keys.dimension_folding(site_id, day))
    answers = iter(pipe.execute())
    return {day: {m.decode() for m in next(answers) | next(answers)} for day in days}


# Fields that always keep their day HLL (lib/segments.lua: their week and month unions read
# them), so never need a fold: pages, custom events and their property groups.
KEEP_HLLS = tuple(f"{kind}{keys.FIELD_VALUE_SEP}" for kind in ("page", "event", "prop"))


def ensure_hlls(r: redis.Redis, site_id: int, pairs: Iterable[tuple[date, str]]) -> int:
    """Make sure each (day, field) that has visitors has its day HLL, folding the bitmap-only
    ones; returns how many were folded. One round trip when some may be, none for fields
    that always keep their HLLs (KEEP_HLLS: a filtered page breakdown asks for thousands)."""
    by_day: dict[date, set[str]] = {}
    for day, field in pairs:
        if not field.startswith(KEEP_HLLS):
            by_day.setdefault(day, set()).add(field)
    if not by_day:
        return 0
    only = bitmap_only(r, site_id, by_day)
    folded = 0
    for day in sorted(only):
        folded += fold(r, site_id, day, sorted(by_day[day] & only[day]))
    return folded


def fold(r: redis.Redis, site_id: int, day: date, fields: list[str]) -> int:
    """Fold these bitmap-only (or half-folded) values of the day into their HLLs."""
    if not fields:
        return 0
    pipe = r.pipeline(transaction=False)
    for field in fields:
        pipe.smove(keys.dimension_bitmap_only(site_id, day), keys.dimension_folding(site_id, day), field)
    pipe.pttl(keys.dimension_fields(site_id, day))
    *_, ttl_ms = pipe.execute()
    for field in fields:
        hll = keys.dimension_visitors(site_id, day, field)
        pipe = r.pipeline(transaction=False)
        queue_pfadd_bits(pipe, r, keys.dimension_bitmap(site_id, day, field), hll)
        if ttl_ms > 0:  # (a final day's keys have their expiry: the HLL takes the day's; else the rollup sets it)
            pipe.pexpire(hll, ttl_ms)
        pipe.srem(keys.dimension_folding(site_id, day), field)
        pipe.execute()
    return len(fields)


def queue_pfadd_bits(pipe, r: redis.Redis, bitmap: str, hll: str):
    """Queue PFADDs to `hll` of the set bits of `bitmap` (its dense ids), PFADD_CHUNK a
    command: the HLL ingest would have made of the same visitors."""
    batch: list[int] = []
    for visitor in set_bits(r, bitmap):
        batch.append(visitor)
        if len(batch) == PFADD_CHUNK:
            pipe.pfadd(hll, *batch)
            batch = []
    if batch:
        pipe.pfadd(hll, *batch)


def set_bits(r: redis.Redis, key: str) -> Iterable[int]:
    """The offsets of a bitmap's set bits, in order, read a chunk at a time."""
    start = 0
    while True:
        data = cast(bytes, r.getrange(key, start, start + READ_CHUNK - 1))  # (the client returns bytes)
        for match in _NONZERO.finditer(data):
            i = match.start()
            base = 8 * (start + i)
            for k in _OFFSETS[data[i]]:
                yield base + k
        if len(data) < READ_CHUNK:
            return
        start += READ_CHUNK
