"""Read functions: the numbers behind the read API, the dashboard and exports.

All reads of one request go out as one pipeline. Visitors are HyperLogLog estimates
(0.81% standard error); pageviews are exact counters; DAU and new visitors are exact
bitmap counts.
"""
from datetime import date, datetime, timedelta

import redis

from . import keys
from .periods import days_between, monday, period_days, period_start
from .sites import SiteInfo

METRICS = ("visitors", "pageviews", "dau", "new_visitors", "wau", "mau", "stickiness")
DEFAULT_METRICS = ("visitors", "pageviews", "dau", "new_visitors")
PERIOD_METRICS = ("visitors", "pageviews", "new_visitors")  # for interval=week|month
WINDOW_METRICS = {"wau", "mau", "stickiness"}
# Pages ranked by visitors: at most this many candidates get their visitors counted (a
# multi-key PFCOUNT each); see top_pages().
MAX_PAGE_CANDIDATES = 5000
DAY_PERIODS = 30  # retention: days after a day cohort
WEEK_PERIODS = 12  # weeks after a week cohort
REALTIME_MINUTES = 5


def daily_values(r: redis.Redis, site: SiteInfo, start: date, end: date, windows: bool = True) -> dict[date, dict]:
    """Every metric of every day: closed days from their stored rollup rows, the others
    (today, or days no rollup has finished yet) live from Redis."""
    from .models import DailyMetrics
    from .rollups import day_metrics, scratch

    days = days_between(start, end)
    values = {
        row.date: {
            "visitors": row.visitors,
            "pageviews": row.pageviews,
            "dau": row.dau,
            "new_visitors": row.new_visitors,
            "wau": row.wau,
            "mau": row.mau,
        }
        for row in DailyMetrics.objects.filter(site_id=site.id, final=True, date__range=(start, end))
    }
    missing = [day for day in days if day not in values]
    if missing:
        with scratch(r, site.id) as tmp:
            values.update(day_metrics(r, site, missing, tmp, windows=windows))
    for row in values.values():
        if "mau" in row:
            row["stickiness"] = round(row["dau"] / row["mau"], 4) if row["mau"] else 0.0
    return values


def timeseries(r: redis.Redis, site: SiteInfo, start: date, end: date, metrics=DEFAULT_METRICS, interval: str = "day") -> list[dict]:
    """One row per day (or per ISO week / calendar month touching the range), zeros
    included. Week and month visitors are true unions (HLL merge), not sums of days."""
    values = daily_values(r, site, start, end, windows=bool(WINDOW_METRICS & set(metrics)))
    days = days_between(start, end)
    if interval == "day":
        return [{"date": day.isoformat(), **{m: values[day][m] for m in metrics}} for day in days]

    from .models import PeriodVisitors

    groups: dict[date, list[date]] = {}
    for day in days:
        groups.setdefault(period_start(interval, day), []).append(day)
    stored = {
        row.start: row.visitors
        for row in PeriodVisitors.objects.filter(site_id=site.id, unit=interval, final=True, start__in=list(groups))
    }
    pipe = r.pipeline(transaction=False)
    for first, members in groups.items():
        pipe.pfcount(*(keys.site_visitors(site.id, day) for day in members))
    live = dict(zip(groups, pipe.execute()))
    rows = []
    for first, members in groups.items():
        whole = members == period_days(interval, first)
        row = {"date": first.isoformat()}
        for metric in metrics:
            if metric == "visitors":
                row[metric] = stored[first] if whole and first in stored else live[first]
            elif metric == "new_visitors" and site.daily_salt:
                row[metric] = None
            else:
                row[metric] = sum(values[day][metric] for day in members)
        rows.append(row)
    return rows


def retention(r: redis.Redis, site: SiteInfo, unit: str, start: date, end: date, periods: int) -> list[dict]:
    """Cohorts starting start..end (days, or the ISO weeks touching the range): stored
    rows where the rollups made them, live from Redis otherwise; retained[n] for n up to
    `periods`, and only for periods that have begun."""
    from .models import Retention
    from .rollups import retention as live_retention
    from .rollups import scratch

    if unit == "day":
        cohorts = days_between(start, end)
        last = site.today()
    else:
        cohorts = sorted({monday(day) for day in days_between(start, end)})
        last = monday(site.today())
    cohorts = [c for c in cohorts if c <= last]
    rows = {
        row.cohort: (row.size, row.retained)
        for row in Retention.objects.filter(site_id=site.id, unit=unit, cohort__in=cohorts)
    }
    missing = [c for c in cohorts if c not in rows]
    if missing:
        with scratch(r, site.id) as tmp:
            for cohort, size, retained in live_retention(r, site, unit, missing, last, tmp, live=True):
                rows[cohort] = (size, retained)
    return [
        {"cohort": c.isoformat(), "size": rows[c][0], "retained": rows[c][1][: periods + 1]} for c in cohorts
    ]


def top_pages(r: redis.Redis, site: SiteInfo, start: date, end: date, limit: int = 10) -> list[dict]:
    """Pages by visitors over the range, with exact pageviews.

    Visitors are a union over the whole range (a visitor who came back on several days
    counts once): multi-key PFCOUNT over the fewest keys that cover it, the rollups'
    merged month and week HLLs where whole periods fit, day HLLs for the rest. Per-day
    numbers come from the stored page rows for rolled-up days, from Redis for the others.

    A union costs a multi-key PFCOUNT, so pages are taken in order of visitor-days (the
    sum of their daily visitors, which no union exceeds): once the limit-th best union is
    at least the next page's visitor-days, no other page can enter the top. Past
    2 x limit + 5 candidates the ranking stops there (a page with many one-day visitors
    far down the visitor-days order is the only thing that could be missed)."""
    from django.db.models import Sum

    from .models import DailyMetrics, PageDaily

    days = days_between(start, end)
    final = set(
        DailyMetrics.objects.filter(site_id=site.id, final=True, date__range=(start, end)).values_list("date", flat=True)
    )
    pageviews: dict[str, int] = {}
    visitor_days: dict[str, int] = {}
    if final:
        totals = (
            PageDaily.objects.filter(site_id=site.id, date__in=final)
            .values("path")
            .annotate(views=Sum("pageviews"), people=Sum("visitors"))
        )
        for row in totals:
            pageviews[row["path"]] = row["views"]
            visitor_days[row["path"]] = row["people"]
    for pages in page_days(r, site.id, [day for day in days if day not in final]).values():
        for path, (people, views) in pages.items():
            pageviews[path] = pageviews.get(path, 0) + views
            visitor_days[path] = visitor_days.get(path, 0) + people

    ranked = sorted(visitor_days, key=lambda p: (-visitor_days[p], -pageviews[p], p))
    cover = _cover(site, start, end)
    visitors: dict[str, int] = {}
    wanted, budget = limit + 5, min(2 * limit + 5, MAX_PAGE_CANDIDATES)
    while True:
        batch = [path for path in ranked[:wanted] if path not in visitors]
        pipe = r.pipeline(transaction=False)
        for path in batch:
            pipe.pfcount(*cover(path))
        visitors.update(zip(batch, pipe.execute()))
        best = sorted(visitors.values(), reverse=True)[:limit]
        if wanted >= len(ranked) or wanted >= budget:
            break
        if len(best) == limit and best[-1] >= visitor_days[ranked[wanted]]:
            break
        wanted = min(2 * wanted, budget)
    pages = [{"page": p, "visitors": v, "pageviews": pageviews[p]} for p, v in visitors.items()]
    pages.sort(key=lambda p: (-p["visitors"], -p["pageviews"], p["page"]))
    return pages[:limit]


def page_days(r: redis.Redis, site_id: int, days: list[date]) -> dict[date, dict[str, tuple[int, int]]]:
    """Each page's (visitors, pageviews) on each day, from the raw keys: two round trips."""
    if not days:
        return {}
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.smembers(keys.pages_index(site_id, day))
    listed = [(day, sorted(p.decode() for p in paths)) for day, paths in zip(days, pipe.execute())]
    pipe = r.pipeline(transaction=False)
    for day, paths in listed:
        for path in paths:
            pipe.pfcount(keys.page_visitors(site_id, day, path))
            pipe.get(keys.page_pageviews(site_id, day, path))
    answers = iter(pipe.execute())
    return {day: {path: (next(answers), int(next(answers) or 0)) for path in paths} for day, paths in listed}


def _cover(site: SiteInfo, start: date, end: date):
    """A function path -> HLL keys whose union is the page's visitors from start to end:
    whole final months and weeks inside the range by their merged keys, other days by
    their day keys."""
    from .models import PeriodVisitors

    periods = PeriodVisitors.objects.filter(site_id=site.id, final=True, start__gte=start, start__lte=end)
    covered: set[date] = set()
    parts = []
    for row in sorted(periods, key=lambda p: (p.unit != "month", p.start)):  # months first
        span = period_days(row.unit, row.start)
        if span[-1] <= end and not covered.intersection(span):
            parts.append((row.unit, row.start))
            covered.update(span)
    rest = [day for day in days_between(start, end) if day not in covered]

    def keys_of(path: str) -> list[str]:
        return [keys.period_visitors(site.id, unit, first, path) for unit, first in parts] + [
            keys.page_visitors(site.id, day, path) for day in rest
        ]

    return keys_of


def realtime_keys(site: SiteInfo, now: datetime) -> list[str]:
    """The minute HLLs of the last five UTC minutes, this one included."""
    minute = now.replace(second=0, microsecond=0)
    return [keys.realtime(site.id, minute - timedelta(minutes=n)) for n in range(REALTIME_MINUTES)]


def realtime_visitors(r: redis.Redis, site: SiteInfo, now: datetime) -> int:
    """Distinct visitors over the last five minutes: one PFCOUNT over their minute HLLs."""
    return r.pfcount(*realtime_keys(site, now))


def search_pages(r: redis.Redis, site: SiteInfo, prefix: str, limit: int = 10) -> list[str]:
    """Paths starting with `prefix`, in byte order: ZRANGEBYLEX over a set of equal scores."""
    low = b"[" + prefix.encode() if prefix else b"-"
    high = b"[" + prefix.encode() + b"\xff" if prefix else b"+"
    return [p.decode() for p in r.zrangebylex(keys.page_search(site.id), low, high, start=0, num=limit)]


def page_timeseries(r: redis.Redis, site: SiteInfo, path: str, start: date, end: date) -> list[dict]:
    """One page's visitors (HLL) and pageviews per day."""
    days = days_between(start, end)
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.pfcount(keys.page_visitors(site.id, day, path))
        pipe.get(keys.page_pageviews(site.id, day, path))
    answers = pipe.execute()
    return [
        {"date": day.isoformat(), "visitors": answers[2 * n], "pageviews": int(answers[2 * n + 1] or 0)}
        for n, day in enumerate(days)
    ]


def summary(r: redis.Redis, site: SiteInfo, start: date, end: date, values: dict | None = None) -> dict:
    """Headline numbers of a period: unique visitors over the whole period (a union, not a
    sum of days), pageviews and new visitors summed, DAU averaged, WAU and MAU on its last
    day, stickiness = average DAU / MAU on the last day."""
    values = values or daily_values(r, site, start, end)
    days = days_between(start, end)
    rows = [values[day] for day in days]
    last = values[min(end, site.today())] if start <= site.today() else rows[-1]
    dau = sum(row["dau"] for row in rows) / len(rows)
    return {
        "visitors": r.pfcount(*(keys.site_visitors(site.id, day) for day in days)),
        "pageviews": sum(row["pageviews"] for row in rows),
        "dau": round(dau, 1),
        "wau": last["wau"],
        "mau": last["mau"],
        "stickiness": round(dau / last["mau"], 4) if last["mau"] else 0.0,
        "new_visitors": None if site.daily_salt else sum(row["new_visitors"] for row in rows),
    }
