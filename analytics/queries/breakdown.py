"""Breakdowns by a visit dimension (source, country, browser, entry page...) and the site's
visit totals (visits, bounce rate, visit duration, views per visit), read from the day
tables lib/visits.lua writes at ingest.

Counts (pageviews, visits, bounces, duration, exits) are exact sums over the days.
Visitors of a value over a range are a true union: PFCOUNT over the value's day HLLs
(an estimate, ±0.81%, clamped to at most its pageviews or visits where it has them,
since a visitor made at least one of each).
"""
from datetime import date

import redis

from .. import dimensions
from ..dimensions import TOTAL
from ..periods import days_between
from ..sites import SiteInfo
from ..store import keys

METRICS = ("visitors", "visits", "pageviews", "bounce_rate", "visit_duration", "views_per_visit")
MAX_UNION_VALUES = 1000  # values whose visitors are counted; past it, the most visited by visits


def visit_totals(r: redis.Redis, site: SiteInfo, start: date, end: date) -> dict:
    """{"visits", "bounce_rate", "visit_duration", "views_per_visit"} over the range, from
    the visits that started in it."""
    sums = _sums(r, site, days_between(start, end), [TOTAL])[TOTAL]
    return _rates(sums)


def breakdown(
    r: redis.Redis, site: SiteInfo, start: date, end: date, dimension: str, limit: int = 10, page: int = 1, search: str = ""
) -> tuple[list[dict], int]:
    """The rows of one page of a dimension's breakdown, most visitors first, and how many
    values there are. Rows: {dimension: value, "visitors", "visits", "pageviews",
    "bounce_rate", "visit_duration", "views_per_visit"}; for exit_page: {"exit_page",
    "visits"} (visits that ended there)."""
    if dimension not in dimensions.ALL:
        raise ValueError(f"unknown dimension: {dimension}")
    days = days_between(start, end)
    sid = site.id
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.smembers(keys.dimension_values(sid, day, dimension))
    values = sorted({v.decode() for members in pipe.execute() for v in members})
    if search:
        needle = search.lower()
        values = [v for v in values if needle in v.lower()]
    fields = [dimensions.field(dimension, v) for v in values]
    sums = _sums(r, site, days, fields)
    if dimension == dimensions.EXIT:
        rows = [{dimension: v, "visits": sums[f]["exits"]} for v, f in zip(values, fields) if sums[f]["exits"] > 0]
        rows.sort(key=lambda row: (-row["visits"], row[dimension]))
        return rows[(page - 1) * limit : page * limit], len(rows)
    ranked = sorted(zip(values, fields), key=lambda vf: (-sums[vf[1]]["visits"], -sums[vf[1]]["pageviews"], vf[0]))
    ranked = [vf for vf in ranked if sums[vf[1]]["visits"] or sums[vf[1]]["pageviews"]]
    counted = ranked[:MAX_UNION_VALUES]
    pipe = r.pipeline(transaction=False)
    for _, f in counted:
        pipe.pfcount(*(keys.dimension_visitors(sid, day, f) for day in days))
    visitors = pipe.execute()
    rows = []
    for (value, f), people in zip(counted, visitors):
        s = sums[f]
        bound = max(s["pageviews"], s["visits"])
        rows.append({dimension: value, "visitors": min(people, bound) if bound else people, **_rates(s), "pageviews": s["pageviews"]})
    rows.sort(key=lambda row: (-row["visitors"], -row["visits"], row[dimension]))
    return rows[(page - 1) * limit : page * limit], len(ranked)


def _sums(r: redis.Redis, site: SiteInfo, days: list[date], fields: list[str]) -> dict[str, dict[str, int]]:
    """field -> table -> the sum over the days (0 where missing)."""
    sums = {f: dict.fromkeys(dimensions.TABLES, 0) for f in fields}
    if not fields:
        return sums
    pipe = r.pipeline(transaction=False)
    for day in days:
        for table in dimensions.TABLES:
            pipe.hmget(keys.dimension_table(site.id, day, table), fields)
    answers = iter(pipe.execute())
    for _ in days:
        for table in dimensions.TABLES:
            for f, value in zip(fields, next(answers)):
                if value is not None:
                    sums[f][table] += int(value)
    return sums


def _rates(s: dict[str, int]) -> dict:
    visits = s["visits"]
    return {
        "visits": visits,
        "bounce_rate": round(100 * s["bounces"] / visits) if visits else None,
        "visit_duration": round(s["duration"] / visits) if visits else None,
        "views_per_visit": round(s["pageviews"] / visits, 2) if visits else None,
    }
