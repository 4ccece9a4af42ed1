"""Visitors over a range of days, counted as exactly as Tally can.

Stable-salt sites: every visitor keeps one dense id, so the visitors of any set of days
are exactly the bits set in the OR of the days' active bitmaps (BITOP OR in chunks of at
most 16 keys, then BITCOUNT). Daily-salt sites cannot follow anyone across days: their
range visitors are the HyperLogLog union of the day HLLs (an estimate), never reported
below the largest day's exact DAU. One round trip for any number of ranges.
"""

from collections.abc import Hashable
from datetime import date
from typing import TypeVar

import redis

from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import Scratch, queue_union

Name = TypeVar("Name", bound=Hashable)


def range_visitors(r: redis.Redis, site: SiteInfo, ranges: dict[Name, list[date]], tmp: Scratch) -> dict[Name, int]:
    """{name: visitors over its days} for every named range of days."""
    sid = site.id
    pipe = r.pipeline(transaction=False)
    answers_of: dict[Name, list[int]] = {}  # range -> positions of the answers it takes the max of
    for n, (name, days) in enumerate(ranges.items()):
        if not days:
            answers_of[name] = []
        elif not site.daily_salt and len(days) == 1:
            pipe.bitcount(keys.active(sid, days[0]))
            answers_of[name] = [len(pipe) - 1]
        elif not site.daily_salt:
            dest = tmp.key(f"union:{n}")
            queue_union(pipe, dest, [keys.active(sid, day) for day in days])
            pipe.bitcount(dest)
            answers_of[name] = [len(pipe) - 1]
            pipe.unlink(dest)
        else:  # the HLL union, and each day's exact DAU as a floor
            pipe.pfcount(*(keys.site_visitors(sid, day) for day in days))
            for day in days:
                pipe.bitcount(keys.active(sid, day))
            answers_of[name] = list(range(len(pipe) - len(days) - 1, len(pipe)))
    answers = pipe.execute()
    return {name: max((int(answers[p]) for p in positions), default=0) for name, positions in answers_of.items()}
