"""Rollups: turn the raw per-day keys into the numbers people came for, and store them.

For a site and a range of days, `rollup()` computes and upserts:

* per day: visitors (PFCOUNT), pageviews, DAU and new visitors (BITCOUNT), WAU and MAU
  (BITCOUNT of BITOP OR over the 7 / 30 days ending that day);
* per ISO week and calendar month: unique visitors from PFMERGE of the day HLLs (site and
  each page), and, per week, the OR of its active and new-visitor bitmaps;
* retention: for each day cohort (visitors new that day) the number active n = 0..30
  days later, BITCOUNT(BITOP AND cohort, active(d+n)); for each week cohort n = 0..12
  weeks, against the week's OR.

Every result is a function of the raw keys alone, so running a rollup twice writes the
same rows, and a cohort is always computed as far as data goes (not just to the end of
the range asked): rollups can run in any order. Scratch keys get a TTL and are unlinked
even when a job fails. A day whose raw keys expired after its rollup (sealed: its row
records when, expiry.py) is never recomputed: its stored rows are the record. Any other
day that has keys is, however old (history imported or sent late).
"""

import logging
import secrets
import time
from dataclasses import dataclass
from datetime import date, timedelta
from typing import cast

import redis

from .. import dimensions, hooks, pins
from ..counts.cohorts import DAY_PERIODS, WEEK_PERIODS, retention
from ..counts.days import day_metrics, dropped_days
from ..counts.dimensions import dimension_days
from ..counts.events import event_days
from ..counts.pages import page_days
from ..models import DailyMetrics, DimensionDaily, EventDaily, PageDaily, Retention, Site
from ..periods import days_between, monday
from ..sites import SiteInfo, sealed_days
from ..store import firstdays, idmap, keys
from ..store.locks import held
from ..store.scratch import scratch
from . import expiry
from .compaction import compact_days
from .expiry import earliest_day, merge_sealed_pages
from .periods import merge_periods
from .rows import upsert
from .windows import week_unions

log = logging.getLogger(__name__)


@dataclass
class Summary:
    days: int = 0
    day_cohorts: int = 0
    week_cohorts: int = 0
    periods: int = 0
    first: date | None = None  # the days rolled up, once clipped to the ones that can be
    last: date | None = None


def rollup(r: redis.Redis, site: Site, start: date, end: date, *, today: date | None = None) -> Summary:
    """Compute and store everything that depends on the days start..end (inclusive)."""
    info = SiteInfo.from_model(site)
    today = today or info.today()
    end = min(end, today)
    if start > end:
        return Summary()
    days = _rollable(r, site, days_between(start, end), today)
    if not days:
        return Summary()
    try:
        return _rollup_days(r, site, info, days, today)
    finally:  # (closed days' rows rewritten, their keys folded, even by a rollup that failed half-way)
        _move_epochs(r, site, [day for day in days if day < today])


def _rollup_days(r: redis.Redis, site: Site, info: SiteInfo, days: list[date], today: date) -> Summary:
    start, end = days[0], days[-1]
    with scratch(r, site.pk) as tmp:
        summary = Summary(days=len(days), first=start, last=end)
        pages_sealed = sealed_days(site, days, pages=True)
        metrics = day_metrics(r, info, days, tmp)
        for day, counts in dropped_days(r, site.pk, days).items():
            metrics[day]["dropped"] = counts  # (kept past the day's keys: the dashboard's "Not counted")
        _store_days(site, metrics, today)
        _store_pages(r, site, [day for day in days if day not in pages_sealed])
        merge_sealed_pages(r, site, sorted(pages_sealed))
        _store_dimensions(r, site, days)
        _store_events(r, site, days)

        periods = merge_periods(r, site, info, days, today, tmp)
        summary.periods = len(periods)

        # Week unions for every week a week cohort touched by the range reaches, and the
        # cohorts themselves, where their days' keys are still there (a sealed day's rows
        # are the record: its bitmaps are gone).
        live = _unsealed(r, site, days_between(start - timedelta(days=DAY_PERIODS), end), today)
        first_week = max(monday(start) - timedelta(weeks=WEEK_PERIODS), monday(min(live, default=start)))
        last_week = min(monday(end) + timedelta(weeks=WEEK_PERIODS), monday(today))
        weeks = [first_week + timedelta(weeks=n) for n in range((last_week - first_week).days // 7 + 1)]
        week_unions(r, site, weeks, today)

        day_cohorts = [day for day in days_between(start - timedelta(days=DAY_PERIODS), end) if day in live]
        _store_retention(site, "day", retention(r, info, "day", day_cohorts, today, tmp))
        sealed = (
            sealed_days(site, days_between(weeks[0], min(weeks[-1] + timedelta(days=6), today))) if weeks else set()
        )
        week_cohorts = [
            w
            for w in weeks
            if monday(start) - timedelta(weeks=WEEK_PERIODS) <= w <= monday(end)
            and not any(w + timedelta(days=n) in sealed for n in range(7))
        ]
        _store_retention(site, "week", retention(r, info, "week", week_cohorts, monday(today), tmp))
        summary.day_cohorts, summary.week_cohorts = len(day_cohorts), len(week_cohorts)

    closed = [day for day in days if day < today]
    expiry.apply(r, site, closed)
    expiry.fold_due(r, site, today)  # (visit values whose bitmaps are due to expire get their HLLs first)
    try:
        compact_days(r, site.pk, closed)
    except redis.exceptions.ResponseError:  # (a managed Redis may refuse MEMORY: the bitmaps just keep their slack)
        log.warning("compacting the bitmaps of site %s failed", site.pk, exc_info=True)
    return summary


def _move_epochs(r: redis.Redis, site: Site, closed: list[date]):
    """Move the closed days' counters (keys.closed_epochs): the kept parts over them go
    (queries/kept.py)."""
    if closed:
        pipe = r.pipeline(transaction=False)
        for day in closed:
            pipe.hincrby(keys.closed_epochs(site.pk), day.isoformat(), 1)
        pipe.execute()


def _rollable(r: redis.Redis, site: Site, days: list[date], today: date) -> list[date]:
    """The days a rollup computes: those whose raw keys have not expired since a rollup
    stored them (a sealed day's rows are the record), and, older than the policy keeps,
    only days that have keys (history imported or sent late: any day from 2000 on)."""
    live = _unsealed(r, site, days, today)
    return [day for day in days if day in live]


def _unsealed(r: redis.Redis, site: Site, days: list[date], today: date) -> set[date]:
    """Which of these days have their keys: not sealed (DailyMetrics.sealed()), and
    either within the policy's days or holding a day's keys."""
    first = earliest_day(site, today)
    sealed = sealed_days(site, days)
    unsealed = [day for day in days if day not in sealed]
    old = [day for day in unsealed if day < first]
    pipe = r.pipeline(transaction=False)
    for day in old:
        pipe.exists(keys.active(site.pk, day), keys.pageviews(site.pk, day))
    held = {day for day, n in zip(old, pipe.execute()) if n}
    return {day for day in unsealed if day >= first or day in held}


def _store_days(site: Site, metrics: dict[date, dict], today: date):
    """The days' rows; a day rolled up again (events came since) has its sketches taken
    again when its keys are due to go (their flags start over: rollups/sketching.py)."""
    rows = [DailyMetrics(site=site, date=day, final=day < today, **values) for day, values in metrics.items()]
    DailyMetrics.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["site", "date"],
        update_fields=[
            "visitors",
            "pageviews",
            "dau",
            "new_visitors",
            "wau",
            "mau",
            "dropped",
            "final",
            "updated",
            "pages_sketched",
            "daily_sketched",
        ],
    )


def _store_pages(r: redis.Redis, site: Site, days: list[date]):
    """Each page's visitors and pageviews per day, as rows (see analytics.queries.pages.top_pages)."""
    for day, pages in page_days(r, site.pk, days).items():
        rows = [(site.pk, day, path, visitors, views) for path, (visitors, views) in pages.items()]
        upsert(PageDaily, ("site_id", "date", "path", "visitors", "pageviews"), rows, unique=3)


DIMENSION_COLUMNS = ("site_id", "date", "dimension", "value", "visitors", "pageviews", "visits", "bounces", "duration")


def _store_dimensions(r: redis.Redis, site: Site, days: list[date]):
    """Each visit dimension value's numbers per day, as rows (see analytics.queries.breakdown)."""
    for day, fields in dimension_days(r, site.pk, days).items():
        rows = []
        for name, n in fields.items():
            dimension, value = dimensions.split(name)
            visits = n["exits"] if dimension == dimensions.EXIT else n["visits"]
            rows.append(
                (site.pk, day, dimension, value, n["visitors"], n["pageviews"], visits, n["bounces"], n["duration"])
            )
        upsert(DimensionDaily, DIMENSION_COLUMNS, rows, unique=4)


EVENT_COLUMNS = ("site_id", "date", "group", "name", "property", "value", "visitors", "events")


def _store_events(r: redis.Redis, site: Site, days: list[date]):
    """Each custom event's, and each of its property values', numbers per day, as rows
    (see analytics.queries.goals): goals and property breakdowns keep their counts once
    the raw keys expire."""
    for day, groups in event_days(r, site.pk, days).items():
        rows = [
            (site.pk, day, EventDaily.group_of(*group), *group, visitors, events)
            for group, (visitors, events) in groups.items()
        ]
        upsert(EventDaily, EVENT_COLUMNS, rows, unique=3)


def _store_retention(site: Site, unit: str, rows: list):
    Retention.objects.bulk_create(
        [Retention(site=site, unit=unit, cohort=c, size=size, retained=retained) for c, size, retained in rows],
        update_conflicts=True,
        unique_fields=["site", "unit", "cohort"],
        update_fields=["size", "retained", "updated"],
    )


# The jobs that beat runs, per site. Each holds its own lock and skips when it is taken.


def roll_recent(r: redis.Redis, site: Site) -> Summary | None:
    """Every few minutes: today and yesterday, still changing, and any older day that
    backfilled events touched since (ingest marks them dirty)."""
    today = SiteInfo.from_model(site).today()
    with held(r, keys.lock(site.pk, "rollup-recent")) as lock:
        if lock is None:
            return None
        summary = rollup(r, site, today - timedelta(days=1), today, today=today)
        dirty = _take_dirty_days(r, site)
        try:
            for first, last in _ranges(dirty):
                summary.days += rollup(r, site, first, last, today=today).days
        except Exception:
            r.sadd(keys.dirty_days(site.pk), *(day.isoformat() for day in dirty))  # the next run retries
            raise
        return summary


def rollup_when_free(r: redis.Redis, site: Site, start: date, end: date, wait_s: float = 600.0, **kwargs) -> Summary:
    """rollup() under the lock the five-minute job holds, waiting for it: two rollups of
    the same days at once could both merge a sealed day's page keys (merge_sealed_pages)."""
    deadline = time.monotonic() + wait_s
    while True:
        with held(r, keys.lock(site.pk, "rollup-recent")) as lock:
            if lock is not None:
                return rollup(r, site, start, end, **kwargs)
        if time.monotonic() > deadline:
            raise TimeoutError(f"site {site.pk}: another rollup held its lock for {wait_s:.0f} s")
        time.sleep(0.5)


def _take_dirty_days(r: redis.Redis, site: Site) -> list[date]:
    """Take the dirty days: the set is renamed away first, so days marked while we roll
    land in a fresh set for the next run."""
    taken = keys.temporary(site.pk, secrets.token_hex(6), "dirty")
    try:
        r.rename(keys.dirty_days(site.pk), taken)
    except redis.exceptions.ResponseError:  # no such key: nothing dirty
        return []
    days = sorted(date.fromisoformat(d.decode()) for d in cast(set[bytes], r.smembers(taken)))
    r.unlink(taken)
    return days


def _ranges(days: list[date]) -> list[tuple[date, date]]:
    """Sorted days as contiguous (first, last) ranges."""
    ranges: list[tuple[date, date]] = []
    for day in days:
        if ranges and day == ranges[-1][1] + timedelta(days=1):
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return ranges


def first_unfinished_day(site: Site) -> date:
    """The day after the last final one; for a site never rolled up, its creation day."""
    last_final = (
        DailyMetrics.objects.filter(site=site, final=True).order_by("-date").values_list("date", flat=True).first()
    )
    if last_final is not None:
        return last_final + timedelta(days=1)
    return site.created.astimezone(SiteInfo.from_model(site).tz).date()


def roll_closed(r: redis.Redis, site: Site) -> Summary | None:
    """Closed days not yet final, oldest first: yesterday on a normal night, every missed
    day after an outage (it looks back to the last final day)."""
    today = SiteInfo.from_model(site).today()
    if not r.exists(keys.visitor_id_packed(site.pk)):  # (an id map from before the packed buckets, once)
        idmap.pack(r, site.pk)
    firstdays.migrate(r, site.pk)  # (earlier versions' first days, once: nothing to do after)
    hooks.registered.closed_days_rolling(r, site)  # (an app's upkeep: the recommendations app's once-recount)
    start = first_unfinished_day(site)
    end = today - timedelta(days=1)
    if start > end:
        pins.sync(r, site.pk)  # (a restored or flushed Redis gets its pinned values back within a night)
        expiry.fold_due(r, site, today)  # (rollup() does it when it runs)
        return Summary()
    with held(r, keys.lock(site.pk, "rollup-closed")) as lock:
        if lock is None:
            return None
        summary = rollup(r, site, start, end, today=today)
        pins.sync(r, site.pk)  # (the day just rolled up names the top values to pin)
        return summary
