"""The nightly warm-up: the breakdown parts read lately, made again for the new day.

Why: a kept part (queries/kept.py) holds a range's closed days summed and merged, and a
breakdown that finds it answers in a fraction of the time of one that makes it (at
3,900,000 events, countries over 30 days: 21 ms warm, 538 ms on a first view). A range ending
today has a new head every day, so without this the first view of each morning, the
one a person opening the dashboard waits for, would make every panel's part. The parts
read over the last READ_DAYS days (keys.kept_read: their days back and their dimension)
are made here right after the nightly rollup, by the same breakdowns a view runs,
through the query runner: what they keep is what a view would keep. Sites nobody reads
cost nothing.
"""

import logging
import time
from datetime import timedelta
from typing import cast

import redis

from .. import dimensions
from ..periods import day_number
from ..sites import SiteInfo
from ..store import keys
from . import kept
from .runner import Query, run

log = logging.getLogger(__name__)

READ_DAYS = 8  # a part read within this many days is made again each night (a weekly reader's too)
MOST = 40  # parts made a night for a site, the most recently read first (of kept.LONG_HEADS heads at most)
ROWS = 50  # rows a warm-up counts: the dashboard's panels show 10, its map every country (31)


def warm(r: redis.Redis, site: SiteInfo) -> list[tuple[int, str, float]]:
    """Make the parts this site's readers read lately, for today's heads: (days back,
    dimension, seconds) of each breakdown run. Notes older than READ_DAYS go."""
    key, today = keys.kept_read(site.id), site.today()
    notes = {field.decode(): int(day) for field, day in cast(dict[bytes, bytes], r.hgetall(key)).items()}
    oldest = day_number(today) - READ_DAYS
    stale = [field for field, day in notes.items() if day < oldest]
    if stale:
        r.hdel(key, *stale)
    ran: list[tuple[int, str, float]] = []
    heads: set[str] = set()  # (the days back taken: past kept.LONG_HEADS a part would live an hour)
    for field in sorted((f for f in notes if f not in stale), key=lambda f: -notes[f]):
        back, _, name = field.partition(":")
        if len(ran) == MOST or (back not in heads and len(heads) == kept.LONG_HEADS):
            continue
        dimension = "page" if name == "pages" else name.removeprefix("sums:")
        if not back.isdigit() or (dimension != "page" and dimension not in dimensions.ALL):
            r.hdel(key, field)  # (a note of a part no longer made this way)
            continue
        start = time.perf_counter()
        try:
            run(r, Query(site, today - timedelta(days=int(back)), today, "breakdown", dimension=dimension, limit=ROWS))
        except ValueError:  # (a range past what the site keeps: the view would say so too)
            log.info("site %s: no warm-up of %s days back by %s", site.id, back, dimension, exc_info=True)
            continue
        heads.add(back)
        ran.append((int(back), dimension, time.perf_counter() - start))
    return ran
