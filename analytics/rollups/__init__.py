"""Rollups: the raw per-day keys turned into stored rows, by Celery beat (analytics.tasks).

    jobs.py     rollup() of a range of days; the recent and closed-days jobs, under locks
    periods.py  week and month unions of HLLs (PFMERGE)
    windows.py  week unions of the activity bitmaps (BITOP OR)
    expiry.py   the raw keys' expiry policy, applied once their days are final

The numbers themselves are counted by analytics.counts, which the read side uses too.
"""

from .expiry import earliest_day
from .jobs import Summary, first_unfinished_day, roll_closed, roll_recent, rollup, rollup_when_free

__all__ = [
    "Summary",
    "earliest_day",
    "first_unfinished_day",
    "roll_closed",
    "roll_recent",
    "rollup",
    "rollup_when_free",
]
