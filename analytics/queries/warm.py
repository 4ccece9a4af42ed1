"""The nightly warm-up: the breakdown parts read lately, made again for the new day.

Why: a kept part (queries/kept.py) holds a range's closed days summed and merged, and a
breakdown that finds it answers in a fraction of the time of one that makes it (at
1,000,000 events, countries over 30 days: 11.5 ms against 219 ms). A range ending today
has a new head every day, so without this the first view of each morning, the one a
person opening the dashboard waits for, would make every panel's part. The parts read
over the last kept.READ_DAYS days (keys.kept_read: their days back and their dimension)
are made once a day, after the rollup that closed yesterday (analytics.tasks), by the
same breakdowns a view runs, through the query runner: what they keep is what a view
would keep, and it lasts until the site's next midnight. Sites nobody reads cost nothing.
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

HEADS = 8  # ranges a site gets warmed up a night (the dashboard's 7 and 30 days, a few more)
MOST = 40  # parts made a night for a site, of those ranges, the most recently read first
ROWS = 50  # rows a warm-up counts: the dashboard's panels show 10, its map every country (31)
NOTES = 200  # notes kept after a warm-up, the most recent (a reader of many ranges adds more)


def nightly(r: redis.Redis, site: SiteInfo) -> list[tuple[int, str, float]]:
    """warm(), once a site-day: the first rollup job after the site's midnight (the
    five-minute one rolls yesterday up as final) runs it, the others find it done."""
    today = day_number(site.today())
    if cast(bytes | None, r.set(keys.kept_warmed(site.id), today, ex=3 * 86400, get=True)) == str(today).encode():
        return []
    return warm(r, site)


def warm(r: redis.Redis, site: SiteInfo) -> list[tuple[int, str, float]]:
    """Make the parts this site's readers read lately, for today's heads: (days back,
    dimension, seconds) of each breakdown run. Notes past kept.READ_DAYS, or past the
    NOTES most recent, go."""
    key, today = keys.kept_read(site.id), site.today()
    notes = {field.decode(): int(ms) for field, ms in cast(dict[bytes, bytes], r.hgetall(key)).items()}
    newest = sorted(notes, key=lambda f: -notes[f])
    oldest = (time.time() - kept.READ_DAYS * 86400) * 1000
    kept_notes = [f for f in newest[:NOTES] if notes[f] >= oldest]  # (a prefix: newest first)
    if gone := newest[len(kept_notes) :]:
        r.hdel(key, *gone)
    ran: list[tuple[int, str, float]] = []
    heads: set[str] = set()  # (the ranges taken, by days back)
    for field in kept_notes:
        back, _, name = field.partition(":")
        dimension = "page" if name == "pages" else name.removeprefix("sums:")
        if not back.isdigit() or (dimension != "page" and dimension not in dimensions.ALL):
            r.hdel(key, field)  # (a note of a part no longer made this way)
            continue
        if len(ran) == MOST or (back not in heads and len(heads) == HEADS):
            continue
        heads.add(back)
        start = time.perf_counter()
        try:
            with kept.until_midnight():
                run(
                    r,
                    Query(site, today - timedelta(days=int(back)), today, "breakdown", dimension=dimension, limit=ROWS),
                )
        except Exception:  # (one part that fails leaves the others, and the rollup that called it, to go on)
            log.warning("site %s: no warm-up of %s days back by %s", site.id, back, dimension, exc_info=True)
            continue
        ran.append((int(back), dimension, time.perf_counter() - start))
    return ran
