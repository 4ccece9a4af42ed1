"""One query, one runner: every reader (the read API, the dashboard and its details pages,
share links, exports) asks for its numbers as a Query and gets a Result, so the same
question gets the same answer wherever it is asked.

A Query names the site, the days, what to count (`kind`: an aggregate, a time series, a
breakdown by a dimension, retention cohorts), the filters, a comparison and paging. The
runner picks the source of each number (the modules of this package: raw bitmaps and
counts, HLLs, the rollups' stored rows, or estimates built from them where a filter meets
days whose bitmaps expired) and says in the Result's `meta` which numbers are estimates
and why (`estimates`: metric -> reason; rows carry their own "estimate"). Callers no
longer choose between the filtered and the unfiltered functions; whether filters are set
is the runner's business. Plausible's Stats.QueryRunner has the same shape.

`Memo` shares a request's work between queries (the dashboard asks for the same days'
values for its chart, its cards and its actives): pass one to run() for several queries.
"""

from dataclasses import dataclass, field
from datetime import date

import redis

from .. import dimensions
from ..periods import days_between
from ..sites import SiteInfo
from . import filtered, segments
from .breakdown import breakdown as visit_breakdown
from .breakdown import candidate_values
from .days import (
    AGGREGATE_METRICS,
    COMPARISONS,
    DEFAULT_METRICS,
    UNION_IMPORTED,
    aggregate,
    daily_values,
    period_visitors,
    previous,
    timeseries,
)
from .dropped import dropped
from .goals import goals, properties
from .hours import hourly
from .pages import candidate_pages, ranked_pages
from .retention import retention
from .stored import imported_days

KINDS = ("aggregate", "timeseries", "breakdown", "retention", "dropped")
PROPS = "event:props:"  # a custom property's dimension: event:props:NAME (Plausible's name)
MAX_PAGES_LISTED = 1000  # pages ranked for a breakdown by page (a panel's search looks among them)


@dataclass(frozen=True)
class Query:
    site: SiteInfo
    start: date
    end: date
    kind: str = "aggregate"
    metrics: tuple[str, ...] = ()
    filters: tuple[segments.Filter, ...] = ()
    compare: str | None = None  # "previous_period" or "year"
    dimension: str = ""  # breakdown: a visit dimension, "page", "goal" or "event:props:NAME"
    interval: str = "day"  # timeseries: hour, day, week or month; retention: day or week
    limit: int = 10
    page: int = 1
    search: str = ""  # breakdown: only the values containing this (case-insensitive)
    event: str | None = None  # breakdown of a custom property: of this event's only
    periods: int = 0  # retention: periods after each cohort's first
    windows: bool = True  # timeseries by day: WAU, MAU and stickiness per day (the OR of 7 and 30 days)


@dataclass
class Result:
    query: Query
    rows: list[dict] = field(default_factory=list)
    totals: dict = field(default_factory=dict)  # aggregate: {metric: {"value"[, "change"][, "estimate"]}}
    comparison: "Result | None" = None
    meta: dict = field(default_factory=dict)  # estimate (any number estimated), estimates {metric: why}, total, filters

    @property
    def estimate(self) -> bool:
        return bool(self.meta.get("estimate"))


class Memo(dict):
    """Values a request has counted already, by what they count."""


def run(r: redis.Redis, query: Query, memo: Memo | None = None) -> Result:
    if query.kind not in KINDS:
        raise ValueError(f"unknown kind: {query.kind}")
    memo = Memo() if memo is None else memo
    result = {
        "aggregate": _aggregate,
        "timeseries": _timeseries,
        "breakdown": _breakdown,
        "retention": _retention,
        "dropped": _dropped,
    }[query.kind](r, query, memo)
    if query.filters:
        result.meta["filters"] = ";".join(str(f) for f in query.filters)
    result.meta.setdefault("estimate", False)
    if imported := imported_days(query.site.id, query.start, query.end):
        # (days whose numbers are another product's daily totals: readers say so, and what it means)
        result.meta["imported"] = {"days": len(imported), "first": min(imported), "last": max(imported)}
        summed = query.kind == "breakdown" or (query.kind == "timeseries" and query.interval in ("week", "month"))
        if summed and query.start < query.end:  # (a visitor of two imported days counts twice in a row here)
            result.meta["estimate"] = True
            result.meta.setdefault("estimates", {}).setdefault("visitors", UNION_IMPORTED)
    return result


def days_values(
    r: redis.Redis, site: SiteInfo, filters, start: date, end: date, memo: Memo, windows: bool = True
) -> tuple[dict, bool]:
    """Each day's numbers ({day: visitors, dau, new_visitors, wau, mau, stickiness,
    pageviews}) and whether any is estimated, counted once per request."""
    key = _days_key(site, filters, start, end, windows)
    if key not in memo:
        if filters:
            memo[key] = filtered.daily_values(r, site, filters, start, end, windows=windows)
        else:
            memo[key] = daily_values(r, site, start, end, windows=windows), False
    return memo[key]


def _days_key(site: SiteInfo, filters, start: date, end: date, windows: bool) -> tuple:
    return ("days", site.id, tuple(filters), start, end, windows)


def _aggregate(r: redis.Redis, q: Query, memo: Memo) -> Result:
    metrics = q.metrics or AGGREGATE_METRICS
    compare = q.compare if q.compare in COMPARISONS else None
    if q.filters:
        totals, estimate = filtered.aggregate(r, q.site, q.filters, q.start, q.end, metrics, compare)
    else:
        values = memo.get(_days_key(q.site, (), q.start, q.end, True), (None,))[0]  # (the days counted already, if any)
        totals, estimate = aggregate(r, q.site, q.start, q.end, metrics, compare, values=values), False
    estimates = {metric: total["estimate"] for metric, total in totals.items() if total.get("estimate")}
    if "visitors" in totals:  # (what goals' conversion rates are of: a breakdown by goal reads it)
        memo[("visitors", q.site.id, q.filters, q.start, q.end)] = totals["visitors"]["value"] or 0
    meta = {"estimate": estimate or bool(estimates), "estimates": estimates}
    if compare:
        meta["compared"] = previous(compare, q.start, q.end)
    return Result(q, totals=totals, meta=meta)


def _timeseries(r: redis.Redis, q: Query, memo: Memo) -> Result:
    result = _series(r, q, q.start, q.end, memo)
    if q.compare in COMPARISONS:
        start, end = previous(q.compare, q.start, q.end)
        result.comparison = _series(r, q, start, end, memo)
        result.comparison.meta["compared"] = (start, end)
        result.meta["estimate"] = result.estimate or result.comparison.estimate
    return result


def _series(r: redis.Redis, q: Query, start: date, end: date, memo: Memo) -> Result:
    metrics = q.metrics or DEFAULT_METRICS
    if q.interval == "hour":  # (filters count visitors by day: the API refuses them by the hour)
        return Result(q, rows=hourly(r, q.site, start, end, metrics) if q.metrics else hourly(r, q.site, start, end))
    if q.interval == "day" and not q.metrics:  # every day's values, as the dashboard's chart takes them
        values, estimate = days_values(r, q.site, q.filters, start, end, memo, q.windows)
        return Result(
            q, rows=[{"date": day.isoformat(), **values[day]} for day in sorted(values)], meta={"estimate": estimate}
        )
    if q.filters:
        rows, estimate = filtered.timeseries(r, q.site, q.filters, start, end, metrics, q.interval)
        return Result(q, rows=rows, meta={"estimate": estimate})
    return Result(q, rows=timeseries(r, q.site, start, end, metrics, q.interval))


def _retention(r: redis.Redis, q: Query, memo: Memo) -> Result:
    if q.filters:
        cohorts, estimate = filtered.retention(r, q.site, q.filters, q.interval, q.start, q.end, q.periods)
        return Result(q, rows=cohorts, meta={"estimate": estimate})
    return Result(q, rows=retention(r, q.site, q.interval, q.start, q.end, q.periods))


def _dropped(r: redis.Redis, q: Query, memo: Memo) -> Result:
    """The events not counted (bots, data centres, spam, patterns, exclusions): totals by
    reason, and a row per day that dropped any. Filters do not apply: a dropped event
    was never given an audience."""
    totals, rows = dropped(r, q.site, q.start, q.end)
    return Result(q, rows=rows, totals=totals)


def _breakdown(r: redis.Redis, q: Query, memo: Memo) -> Result:
    """Rows by the query's dimension, most visitors first, one page of them, and their
    number in `meta["total"]`. A filtered audience's rows have visitors (goals: and
    conversion rates) only: the other counts exist per value, not per combination."""
    if q.filters:
        rows, estimate = _filtered_rows(r, q, memo)
        return Result(q, rows=_page(rows, q), meta={"total": len(rows), "estimate": estimate})
    if q.dimension.startswith(PROPS):
        rows, total = properties(
            r, q.site, q.start, q.end, q.dimension[len(PROPS) :][:300], q.event, q.limit, q.page, q.search
        )
    elif q.dimension == "goal":
        every = goals(r, q.site, q.start, q.end, _visitors(r, q, memo), q.search)
        rows, total = _page(every, q), len(every)
    elif q.dimension == "page":
        ranked, total = ranked_pages(r, q.site, q.start, q.end, q.limit * q.page, q.search)
        rows = ranked[(q.page - 1) * q.limit :]
    else:
        rows, total = visit_breakdown(r, q.site, q.start, q.end, q.dimension, q.limit, q.page, q.search)
    return Result(q, rows=rows, meta={"total": total})


def _filtered_rows(r: redis.Redis, q: Query, memo: Memo) -> tuple[list[dict], bool]:
    """Every row of a filtered breakdown (the values the whole audience has, the most
    visitors first, counted for the filtered one), and whether any is estimated."""
    if q.dimension.startswith(PROPS) or q.dimension == dimensions.EXIT:
        raise ValueError(f"filters: not available with {q.dimension} (its rows count events or visits, not visitors)")
    if q.dimension == "goal":
        return filtered.goals(r, q.site, q.filters, q.start, q.end, _visitors(r, q, memo), q.search)
    bounds: dict = {}
    if q.dimension == "page":
        candidates = candidate_pages(
            r, q.site, q.start, q.end, max(filtered.MAX_ROWS, q.limit * q.page), q.search, bounds
        )
    else:
        candidates = candidate_values(r, q.site, q.start, q.end, q.dimension, filtered.MAX_ROWS, q.search, bounds)
    rows, estimate = filtered.breakdown(
        r, q.site, q.filters, q.start, q.end, q.dimension, candidates, bounds=bounds, shown=q.limit * q.page
    )
    return [
        {q.dimension: row["value"], "visitors": row["visitors"], **({"estimate": True} if row["estimate"] else {})}
        for row in rows
    ], estimate


def _visitors(r: redis.Redis, q: Query, memo: Memo) -> int:
    """The audience's visitors over the range (what conversion rates are of)."""
    key = ("visitors", q.site.id, q.filters, q.start, q.end)
    if key not in memo:
        if q.filters:
            memo[key] = filtered.summary(r, q.site, q.filters, q.start, q.end)[0]["visitors"] or 0
        else:
            memo[key] = period_visitors(r, q.site, days_between(q.start, q.end))[0] or 0
    return memo[key]


def _page(rows: list[dict], q: Query) -> list[dict]:
    return rows[(q.page - 1) * q.limit : q.page * q.limit]
