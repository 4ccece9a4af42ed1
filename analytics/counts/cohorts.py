"""Retention cohorts from the raw bitmaps: how many of a day's (or week's) new visitors
were active n days (weeks) later, BITCOUNT(BITOP AND cohort, active(d + n))."""

from collections.abc import Callable
from datetime import date, timedelta

import redis

from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import SCRATCH_TTL_MS, Scratch, queue_union

DAY_PERIODS = 30  # retention: days after a day cohort
WEEK_PERIODS = 12  # weeks after a week cohort


def retention(
    r: redis.Redis,
    site: SiteInfo,
    unit: str,
    cohorts: list[date],
    last: date,
    tmp: Scratch,
    live: bool = False,
    cohort_of=None,
) -> list:
    """(cohort, size, retained) for each cohort, retained[n] for every period n that has
    begun by `last` (today, or this week's Monday), up to 30 days or 12 weeks.

    Week cohorts use the week unions `week_unions()` keeps; with `live`, they are made
    in scratch keys instead (a read for weeks no rollup has covered yet). `cohort_of`
    (site id, cohort) -> key names other cohorts (a filtered audience's new visitors)."""
    sid = site.id
    cohort_key: Callable[[int, date], str]
    active_key: Callable[[int, date], str]
    if unit == "day":
        cohort_key, active_key, step, periods = keys.new_visitors, keys.active, timedelta(days=1), DAY_PERIODS
    else:
        cohort_key, active_key, step, periods = keys.new_week, keys.active_week, timedelta(weeks=1), WEEK_PERIODS
        if live and cohorts:
            cohort_key, active_key = _scratch_week_unions(r, sid, min(cohorts), last, tmp)
    cohort_key = cohort_of or cohort_key
    result = []
    for start in range(0, len(cohorts), 8):  # a few cohorts per round trip
        pipe = r.pipeline(transaction=False)
        layout = []
        for cohort in cohorts[start : start + 8]:
            source = cohort_key(sid, cohort)
            reach = min(periods, (last - cohort) // step)
            pipe.bitcount(source)
            dest = tmp.key(f"and:{unit}:{cohort.isoformat()}")
            for n in range(reach + 1):
                pipe.bitop("AND", dest, source, active_key(sid, cohort + n * step))
                pipe.bitcount(dest)
            pipe.pexpire(dest, SCRATCH_TTL_MS)  # should this process die before the unlink
            pipe.unlink(dest)
            layout.append((cohort, reach))
        answers = iter(pipe.execute())
        for cohort, reach in layout:
            size = next(answers)
            retained = []
            for _ in range(reach + 1):
                next(answers)
                retained.append(next(answers))
            next(answers), next(answers)  # PEXPIRE, UNLINK
            result.append((cohort, size, retained))
    return result


def _scratch_week_unions(r: redis.Redis, sid: int, first_week: date, last_week: date, tmp: Scratch):
    """OR each week's day bitmaps into scratch keys; returns key functions like keys'."""
    pipe = r.pipeline(transaction=False)
    week = first_week
    while week <= last_week:
        week_days = [week + timedelta(days=n) for n in range(7)]
        queue_union(pipe, tmp.key(f"active-week:{week}"), [keys.active(sid, d) for d in week_days])
        queue_union(pipe, tmp.key(f"new-week:{week}"), [keys.new_visitors(sid, d) for d in week_days])
        week += timedelta(weeks=1)
    pipe.execute()
    return (lambda _, w: tmp.key(f"new-week:{w}")), (lambda _, w: tmp.key(f"active-week:{w}"))
