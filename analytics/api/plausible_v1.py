"""Plausible's Stats API v1 on Tally's own paths: a GET to /api/v1/stats/aggregate,
/timeseries or /breakdown naming `site_id` (Plausible's name) instead of `site` (Tally's)
is Plausible's question, read with Plausible's parameters and defaults and answered in
Plausible's v1 shapes (`{"results": ...}` and nothing else), so that a script written for
Plausible's v1 reads Tally with a new base URL and key. `/realtime/visitors` answers a bare
number, as Plausible's.

Each view translates into one Query for the runner (analytics.queries.runner), the one
Tally's own views use: the same question gets the same numbers. Whether any number is an
estimate is said by the header `Tally-Estimate: true` (absent: every number is exact),
which leaves the body Plausible's. What Tally cannot answer (a wildcard other than
`**text**`, a metric a kind of row does not have, a comparison outside aggregate) is a 400
naming it. Days imported from Plausible's CSV export count with `with_imported=true`
only, as on Plausible. The parameters are declared in params_v1.py.
"""

import functools
from datetime import UTC, date, datetime

from .. import dimensions, queries
from ..store.connection import get_redis
from . import params, params_v1
from .http import ApiError, json_errors, json_response, methods
from .params import PROPS
from .plausible_v2 import goal_conversion_rate, time_labels
from .stats import BREAKDOWN_METRICS

VISIT_ROW = ("visitors", "visits", "pageviews", "views_per_visit", "bounce_rate", "visit_duration")
METRICS = (*VISIT_ROW, "events", "conversion_rate")  # Plausible's v1 names that Tally has somewhere
ESTIMATE_HEADER = "Tally-Estimate"


def on_site_id(tally_view, plausible_view):
    """Tally's view, or Plausible's v1 when the request names `site_id`."""

    @functools.wraps(tally_view)
    def view(request, *args, **kwargs):
        chosen = plausible_view if "site_id" in request.GET else tally_view
        return chosen(request, *args, **kwargs)

    return view


def _answer(results, estimate: bool):
    return json_response({"results": results}, headers={ESTIMATE_HEADER: "true"} if estimate else None)


def _metrics(request, available: tuple[str, ...], where: str) -> list[str]:
    """`metrics` (default visitors): each a Plausible name the answer's rows have, once."""
    wanted = params_v1.V1_METRICS.read(request) or ["visitors"]
    for metric in wanted:
        if metric not in METRICS:
            raise ApiError(400, f"metrics: unknown metric {metric[:60]!r}; Plausible's v1 names: {', '.join(METRICS)}")
        if metric not in available:
            raise ApiError(
                400, f"metrics: {metric} is not available {where} in Tally; choose from {', '.join(available)}"
            )
    if len(set(wanted)) != len(wanted):
        raise ApiError(400, "metrics: a metric is listed twice")
    return wanted


def _counted(request, site, start: date, end: date) -> tuple[date, date] | None:
    """The days counted: the range, less its imported days (at its ends) unless
    `with_imported=true`; None when that leaves none."""
    if params_v1.V1_WITH_IMPORTED.read(request) == "true":
        return start, end
    return queries.without_imports(site.id, start, end)[0]


def _nothing(metric: str):
    """A metric's value over no days."""
    return 0 if metric in ("visitors", "visits", "pageviews", "events") else None


def _no_compare(request, endpoint: str):
    if params_v1.V1_COMPARE.read(request):
        raise ApiError(400, f"compare: not available on {endpoint} (Plausible's v1 compares in aggregate only)")


@methods("GET")
@json_errors
def aggregate(request):
    """`{"results": {metric: {"value"[, "change"]}}}`; conversion_rate (with an event:goal
    filter): the goal's visitors in percent of the other filters' audience."""
    site = params_v1.SITE_ID.read(request)
    start, end = params_v1.V1_PERIOD.read(request, site)
    filters = params_v1.V1_FILTERS.read(request)
    compare = params_v1.V1_COMPARE.read(request)
    goal = any(f.prop == "goal" for f in filters)
    metrics = _metrics(request, VISIT_ROW + (("conversion_rate",) if goal else ()), "without an event:goal filter")
    if compare and "conversion_rate" in metrics:
        raise ApiError(400, "compare: not available with conversion_rate in Tally")
    own = [m for m in metrics if m in VISIT_ROW]
    if "conversion_rate" in metrics and "visitors" not in own:
        own.append("visitors")
    counted = _counted(request, site, start, end)
    if counted is None:
        return _answer({m: {"value": _nothing(m), **({"change": None} if compare else {})} for m in metrics}, False)
    start, end = counted
    r = get_redis()
    result = queries.run(r, queries.Query(site, start, end, "aggregate", tuple(own), filters, compare))
    totals = {
        m: {"value": t["value"], **({"change": t.get("change")} if compare else {})} for m, t in result.totals.items()
    }
    if "conversion_rate" in metrics:
        rate = goal_conversion_rate(r, site, start, end, filters, totals["visitors"]["value"])
        totals["conversion_rate"] = {"value": rate}
    return _answer({m: totals[m] for m in metrics}, result.estimate)


@methods("GET")
@json_errors
def timeseries(request):
    """`{"results": [{"date": "YYYY-MM-DD", metric: N, ...}]}`, a row per day or month, zeros included."""
    site = params_v1.SITE_ID.read(request)
    start, end = params_v1.V1_PERIOD.read(request, site)
    interval = params_v1.V1_INTERVAL.read(request)
    filters = params_v1.V1_FILTERS.read(request)
    _no_compare(request, "timeseries")
    metrics = _metrics(request, VISIT_ROW, "per date or month")
    counted = _counted(request, site, start, end)
    found: dict[str, dict] = {}
    estimate = False
    if counted is not None:
        result = queries.run(
            get_redis(), queries.Query(site, *counted, "timeseries", tuple(metrics), filters, interval=interval)
        )
        found = {row["date"]: row for row in result.rows}
        estimate = result.estimate or any(row.get("estimate") for row in result.rows)
    empty = {m: _nothing(m) for m in metrics}  # (the dates imported days held, left out)
    rows = [
        {"date": label, **{m: found.get(label, empty).get(m) for m in metrics}}
        for label in time_labels(interval, start, end)
    ]
    return _answer(rows, estimate)


def _row_metrics(prop: str, filters: tuple) -> tuple[str, ...]:
    """The Plausible metrics a breakdown's rows have (under filters: visitors; goals' conversion rates too)."""
    if filters:
        if prop.startswith(PROPS) or prop == dimensions.EXIT:
            raise ApiError(
                400, f"filters: not available with property={prop} (its rows count events or visits, not visitors)"
            )
        return ("visitors", "conversion_rate") if prop == "goal" else ("visitors",)
    return tuple(m for m in BREAKDOWN_METRICS.get(prop, ("visitors", "events")) if m in METRICS)


@methods("GET")
@json_errors
def breakdown(request):
    """`{"results": [{name: value, metric: N, ...}]}`, most visitors first, `limit` rows from
    `page`; the key is the property's short name (`source` for visit:source, `page` for
    event:page, `plan` for event:props:plan)."""
    site = params_v1.SITE_ID.read(request)
    start, end = params_v1.V1_PERIOD.read(request, site)
    prop = params.PROPERTY.read(request)
    limit, page = params_v1.V1_LIMIT.read(request), params.PAGE.read(request)
    filters = params_v1.V1_FILTERS.read(request)
    _no_compare(request, "breakdown")
    metrics = _metrics(request, _row_metrics(prop, filters), f"with property={prop}")
    counted = _counted(request, site, start, end)
    if counted is None:
        return _answer([], False)
    start, end = counted
    r = get_redis()
    query = queries.Query(site, start, end, "breakdown", filters=filters, dimension=prop, limit=limit, page=page)
    result = queries.run(r, query)
    if prop in dimensions.ALL and queries.needs_city_database(r, site, start, end, prop, result.meta["total"]):
        raise ApiError(409, f"property={prop}: no city database on this server. {queries.NO_CITY_DATABASE}")
    key = prop.removeprefix(PROPS)
    rows = [{key: row[key], **{m: row.get(m) for m in metrics}} for row in result.rows]
    return _answer(rows, result.estimate or any(row.get("estimate") for row in result.rows))


@methods("GET")
@json_errors
def realtime_visitors(request):
    """The visitors of the last minutes, a bare number (Plausible's /api/v1/stats/realtime/visitors)."""
    site = params_v1.SITE_ID.read(request)
    return json_response(queries.realtime_visitors(get_redis(), site, datetime.now(UTC)))
