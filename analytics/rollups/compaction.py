"""Bitmaps given back the room they reserved while growing (store/scripts/compact.lua).

A day's bitmaps (active and new visitors, and the filter bitmaps of its top values) grow
bit by bit as new visitor ids arrive, and the server reserves room ahead of each growth:
measured, a day of 300,000 new visitors held its 97 filter bitmaps in ~1.7 times their
length. The rollups run this on the closed days they roll (yesterday, every few minutes
until it is final, and backfilled days): a bitmap whose slack is worth it is copied at
its exact length, once, and stays compact for the months it is kept. Not today's: they
would grow their slack back, and each copy is written to the append-only file whole.
Only the slack is touched: every bit stays as it was.
"""

from datetime import date

import redis

from ..store import keys
from ..store.scripts import COMPACT

MIN_SLACK_BYTES = 1024  # smaller slack is not worth a copy
MIN_SLACK_SHARE = 0.2  # nor slack under a fifth of the bitmap's length (a big bitmap's last growth)
KEYS_PER_CALL = 16  # Redis runs nothing else during a call: a few bitmaps each


def compact_days(r: redis.Redis, site_id: int, days: list[date]) -> tuple[int, int]:
    """Compact the days' bitmaps; returns (bitmaps copied, bytes freed)."""
    if not days:
        return 0, 0
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.smembers(keys.dimension_bitmapped(site_id, day))
    names = []
    for day, fields in zip(days, pipe.execute()):
        names += [keys.active(site_id, day), keys.new_visitors(site_id, day)]
        names += [keys.dimension_bitmap(site_id, day, field.decode()) for field in sorted(fields)]
    copied = freed = 0
    for at in range(0, len(names), KEYS_PER_CALL):
        n, saved = COMPACT.run(r, names[at : at + KEYS_PER_CALL], [MIN_SLACK_BYTES, MIN_SLACK_SHARE])
        copied, freed = copied + n, freed + saved
    return copied, freed
