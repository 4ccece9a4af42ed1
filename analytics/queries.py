"""Read functions: the numbers behind the read API, the dashboard and exports.

All reads of one request go out as one pipeline. Visitors are HyperLogLog estimates
(0.81% standard error); pageviews are exact counters; DAU and new visitors are exact
bitmap counts.
"""
from datetime import date, datetime, timedelta

import redis

from . import keys
from .sites import SiteInfo

METRICS = ("visitors", "pageviews", "dau", "new_visitors")
# Pages ranked by visitors are estimated for at most this many candidates (the ones with
# the most pageviews); a multi-key PFCOUNT per page is the cost.
MAX_PAGE_CANDIDATES = 5000
REALTIME_MINUTES = 5


def days_between(start: date, end: date) -> list[date]:
    return [start + timedelta(days=n) for n in range((end - start).days + 1)]


def timeseries(r: redis.Redis, site: SiteInfo, start: date, end: date, metrics=METRICS) -> list[dict]:
    """One row per day from start to end inclusive, zeros included."""
    days = days_between(start, end)
    pipe = r.pipeline(transaction=False)
    for day in days:
        for metric in metrics:
            if metric == "visitors":
                pipe.pfcount(keys.site_visitors(site.id, day))
            elif metric == "pageviews":
                pipe.get(keys.pageviews(site.id, day))
            elif metric == "dau":
                pipe.bitcount(keys.active(site.id, day))
            elif metric == "new_visitors":
                pipe.bitcount(keys.new_visitors(site.id, day))
            else:
                raise ValueError(f"unknown metric {metric}")
    values = iter(pipe.execute())
    rows = []
    for day in days:
        row = {"date": day.isoformat()}
        for metric in metrics:
            value = int(next(values) or 0)
            if metric == "new_visitors" and site.daily_salt:
                value = None  # every visitor is new every day when the salt rotates
            row[metric] = value
        rows.append(row)
    return rows


def top_pages(r: redis.Redis, site: SiteInfo, start: date, end: date, limit: int = 10) -> list[dict]:
    """Pages by visitors over the range (multi-key PFCOUNT of the page's day HLLs, so a
    visitor who came back on several days counts once), with exact pageviews."""
    days = days_between(start, end)
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.smembers(keys.pages_index(site.id, day))
    page_days: dict[str, list[date]] = {}
    for day, paths in zip(days, pipe.execute()):
        for path in paths:
            page_days.setdefault(path.decode(), []).append(day)

    pipe = r.pipeline(transaction=False)
    for path, seen_on in page_days.items():
        pipe.mget([keys.page_pageviews(site.id, day, path) for day in seen_on])
    pageviews = {path: sum(int(v or 0) for v in counts) for path, counts in zip(page_days, pipe.execute())}

    candidates = sorted(pageviews, key=pageviews.get, reverse=True)[:MAX_PAGE_CANDIDATES]
    pipe = r.pipeline(transaction=False)
    for path in candidates:
        pipe.pfcount(*(keys.page_visitors(site.id, day, path) for day in page_days[path]))
    pages = [
        {"page": path, "visitors": visitors, "pageviews": pageviews[path]}
        for path, visitors in zip(candidates, pipe.execute())
    ]
    pages.sort(key=lambda p: (-p["visitors"], -p["pageviews"], p["page"]))
    return pages[:limit]


def realtime_visitors(r: redis.Redis, site: SiteInfo, now: datetime) -> int:
    """Distinct visitors over the last five UTC minutes, this one included."""
    minute = now.replace(second=0, microsecond=0)
    return r.pfcount(*(keys.realtime(site.id, minute - timedelta(minutes=n)) for n in range(REALTIME_MINUTES)))
