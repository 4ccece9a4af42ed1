"""Visitors over a range of days, counted as exactly as Tally can.

Stable-salt sites: every visitor keeps one dense id, so the visitors of any set of days
are exactly the bits set in the OR of the days' active bitmaps (BITOP OR in chunks of at
most 16 keys, then BITCOUNT). Daily-salt sites cannot follow anyone across days: their
range visitors are the HyperLogLog union of the day HLLs (an estimate), never reported
below the largest day's exact DAU. One round trip for any number of ranges.
"""
from collections.abc import Hashable
from datetime import date

import redis

from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import Scratch, queue_union


def range_visitors(r: redis.Redis, site: SiteInfo, ranges: dict[Hashable, list[date]], tmp: Scratch) -> dict[Hashable, int]:
    """{name: visitors over its days} for every named range of days."""
    sid = site.id
    pipe = r.pipeline(transaction=False)
    layout = []
    for n, (name, days) in enumerate(ranges.items()):
        if not days:
            layout.append((name, None))
            continue
        if not site.daily_salt:
            if len(days) == 1:
                pipe.bitcount(keys.active(sid, days[0]))
            else:
                dest = tmp.key(f"union:{n}")
                queue_union(pipe, dest, [keys.active(sid, day) for day in days])
                pipe.bitcount(dest)
                pipe.unlink(dest)
            layout.append((name, len(pipe) - (1 if len(days) == 1 else 2)))
        else:
            pipe.pfcount(*(keys.site_visitors(sid, day) for day in days))
            first = len(pipe) - 1
            for day in days:
                pipe.bitcount(keys.active(sid, day))
            layout.append((name, (first, len(days))))
    answers = pipe.execute()
    result = {}
    for name, where in layout:
        if where is None:
            result[name] = 0
        elif isinstance(where, int):
            result[name] = int(answers[where])
        else:
            first, count = where
            result[name] = max([int(answers[first])] + [int(a) for a in answers[first + 1 : first + 1 + count]])
    return result
