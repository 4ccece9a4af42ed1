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
even when a job fails. Days whose raw keys may have expired (older than the site's
`keep_daily_days`) are never recomputed: their stored rows are the record.
"""
import secrets
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta

import redis

from . import expiry, keys
from .models import DailyMetrics, PageDaily, PeriodVisitors, Retention, Site
from .queries import DAY_PERIODS, WEEK_PERIODS, page_days
from .periods import days_between, monday, month_start, period_days
from .sites import SiteInfo

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


def earliest_day(site: Site, today: date) -> date:
    """The oldest day whose raw keys are surely still there."""
    return today - timedelta(days=site.keep_daily_days - 1)


@dataclass
class Summary:
    days: int = 0
    day_cohorts: int = 0
    week_cohorts: int = 0
    periods: int = 0


def rollup(r: redis.Redis, site: Site, start: date, end: date, *, today: date | None = None) -> Summary:
    """Compute and store everything that depends on the days start..end (inclusive)."""
    info = SiteInfo.from_model(site)
    today = today or info.today()
    end = min(end, today)
    first = earliest_day(site, today)
    start = max(start, first)
    if start > end:
        return Summary()
    days = days_between(start, end)
    with scratch(r, site.pk) as tmp:
        summary = Summary(days=len(days))
        _store_days(site, day_metrics(r, info, days, tmp), today)
        _store_pages(r, site, days)

        periods = _merge_periods(r, site, info, days, today)
        summary.periods = len(periods)

        # Week unions for every week a week cohort touched by the range reaches.
        first_week = max(monday(start) - timedelta(weeks=WEEK_PERIODS), monday(first + timedelta(days=6)))
        last_week = min(monday(end) + timedelta(weeks=WEEK_PERIODS), monday(today))
        weeks = [first_week + timedelta(weeks=n) for n in range((last_week - first_week).days // 7 + 1)]
        week_unions(r, site, weeks, today)

        day_cohorts = days_between(max(start - timedelta(days=DAY_PERIODS), first), end)
        _store_retention(site, "day", retention(r, info, "day", day_cohorts, today, tmp))
        week_cohorts = [w for w in weeks if monday(start) - timedelta(weeks=WEEK_PERIODS) <= w <= monday(end)]
        _store_retention(site, "week", retention(r, info, "week", week_cohorts, monday(today), tmp))
        summary.day_cohorts, summary.week_cohorts = len(day_cohorts), len(week_cohorts)

    expiry.apply(r, site, [day for day in days if day < today])
    return summary


def day_metrics(r: redis.Redis, site: SiteInfo, days: list[date], tmp: Scratch, windows: bool = True) -> dict[date, dict]:
    """Visitors, pageviews, DAU, new visitors, and (with `windows`) WAU and MAU of each
    day, straight from the raw keys: one round trip."""
    sid = site.id
    pipe = r.pipeline(transaction=False)
    wanted = []  # (day, metric, position of its answer)
    for day in days:
        for metric, command, key in (
            ("visitors", pipe.pfcount, keys.site_visitors(sid, day)),
            ("pageviews", pipe.get, keys.pageviews(sid, day)),
            ("dau", pipe.bitcount, keys.active(sid, day)),
            ("new_visitors", pipe.bitcount, keys.new_visitors(sid, day)),
        ):
            wanted.append((day, metric, len(pipe)))
            command(key)
        for metric, window in (("wau", 7), ("mau", 30)) if windows else ():
            dest = tmp.key(f"{metric}:{day.isoformat()}")
            queue_union(pipe, dest, [keys.active(sid, day - timedelta(days=n)) for n in range(window)])
            wanted.append((day, metric, len(pipe)))
            pipe.bitcount(dest)
            pipe.unlink(dest)
    answers = pipe.execute()
    result = {day: {} for day in days}
    for day, metric, position in wanted:
        result[day][metric] = int(answers[position] or 0)
    if site.daily_salt:
        for row in result.values():
            row["new_visitors"] = None
    return result


def _store_days(site: Site, metrics: dict[date, dict], today: date):
    rows = [DailyMetrics(site=site, date=day, final=day < today, **values) for day, values in metrics.items()]
    DailyMetrics.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["site", "date"],
        update_fields=["visitors", "pageviews", "dau", "new_visitors", "wau", "mau", "final", "updated"],
    )


def _store_pages(r: redis.Redis, site: Site, days: list[date]):
    """Each page's visitors and pageviews per day, as rows (see queries.top_pages)."""
    for day, pages in page_days(r, site.pk, days).items():
        rows = [
            PageDaily(site=site, date=day, path=path, visitors=visitors, pageviews=views)
            for path, (visitors, views) in pages.items()
        ]
        PageDaily.objects.bulk_create(
            rows, batch_size=500, update_conflicts=True, unique_fields=["site", "date", "path"], update_fields=["visitors", "pageviews"]
        )


def _merge_periods(r: redis.Redis, site: Site, info: SiteInfo, days: list[date], today: date) -> list:
    """PFMERGE the day HLLs of each week and month the days fall in (site and pages)."""
    sid = info.id
    periods = sorted({("week", monday(d)) for d in days} | {("month", month_start(d)) for d in days})
    page_first = today - timedelta(days=site.keep_page_days - 1)
    ttl = site.keep_daily_days * 86400
    rows = []
    for unit, start in periods:
        span = period_days(unit, start)
        final = span[-1] < today
        present = [d for d in span if d <= today and d >= earliest_day(site, today)]
        if not present:
            continue
        pipe = r.pipeline(transaction=False)
        key = keys.period_visitors(sid, unit, start)
        pipe.pfmerge(key, *(keys.site_visitors(sid, d) for d in present))
        pipe.expire(key, ttl)
        pipe.pfcount(key)
        page_days = [d for d in present if d >= page_first]
        if page_days:
            pipe.sunion(*(keys.pages_index(sid, d) for d in page_days))
        answers = pipe.execute()
        if page_days:
            pipe = r.pipeline(transaction=False)
            for path in answers[3]:
                path = path.decode()
                page_key = keys.period_visitors(sid, unit, start, path)
                pipe.pfmerge(page_key, *(keys.page_visitors(sid, d, path) for d in page_days))
                pipe.expire(page_key, site.keep_page_days * 86400)
            pipe.execute()
        rows.append(PeriodVisitors(site=site, unit=unit, start=start, visitors=answers[2], final=final))
    PeriodVisitors.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["site", "unit", "start"],
        update_fields=["visitors", "final", "updated"],
    )
    return rows


def week_unions(r: redis.Redis, site: Site, weeks: list[date], today: date):
    """OR each week's active and new-visitor bitmaps into lasting week keys."""
    if not weeks:
        return
    sid = site.pk
    ttl_ms = site.keep_daily_days * 86400 * 1000
    pipe = r.pipeline(transaction=False)
    for week in weeks:
        week_days = [week + timedelta(days=n) for n in range(7) if week + timedelta(days=n) <= today]
        queue_union(pipe, keys.active_week(sid, week), [keys.active(sid, d) for d in week_days], ttl_ms)
        queue_union(pipe, keys.new_week(sid, week), [keys.new_visitors(sid, d) for d in week_days], ttl_ms)
    pipe.execute()


def retention(
    r: redis.Redis, site: SiteInfo, unit: str, cohorts: list[date], last: date, tmp: Scratch, live: bool = False
) -> list:
    """(cohort, size, retained) for each cohort, retained[n] for every period n that has
    begun by `last` (today, or this week's Monday), up to 30 days or 12 weeks.

    Week cohorts use the week unions `week_unions()` keeps; with `live`, they are made
    in scratch keys instead (a read for weeks no rollup has covered yet)."""
    sid = site.id
    if unit == "day":
        cohort_key, active_key, step, periods = keys.new_visitors, keys.active, timedelta(days=1), DAY_PERIODS
    else:
        cohort_key, active_key, step, periods = keys.new_week, keys.active_week, timedelta(weeks=1), WEEK_PERIODS
        if live and cohorts:
            cohort_key, active_key = _scratch_week_unions(r, sid, min(cohorts), last, tmp)
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
    from .locks import held

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


def _take_dirty_days(r: redis.Redis, site: Site) -> list[date]:
    """Take the dirty days: the set is renamed away first, so days marked while we roll
    land in a fresh set for the next run."""
    taken = keys.temporary(site.pk, secrets.token_hex(6), "dirty")
    try:
        r.rename(keys.dirty_days(site.pk), taken)
    except redis.exceptions.ResponseError:  # no such key: nothing dirty
        return []
    days = sorted(date.fromisoformat(d.decode()) for d in r.smembers(taken))
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
    last_final = DailyMetrics.objects.filter(site=site, final=True).order_by("-date").values_list("date", flat=True).first()
    if last_final is not None:
        return last_final + timedelta(days=1)
    return site.created.astimezone(SiteInfo.from_model(site).tz).date()


def roll_closed(r: redis.Redis, site: Site) -> Summary | None:
    """Closed days not yet final, oldest first: yesterday on a normal night, every missed
    day after an outage (it looks back to the last final day)."""
    from .locks import held

    today = SiteInfo.from_model(site).today()
    start = first_unfinished_day(site)
    end = today - timedelta(days=1)
    if start > end:
        return Summary()
    with held(r, keys.lock(site.pk, "rollup-closed")) as lock:
        if lock is None:
            return None
        return rollup(r, site, start, end, today=today)
