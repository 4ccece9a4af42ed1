"""Read API: `GET /api/v1/stats/timeseries`, `/aggregate`, `/breakdown`, `/near`, `/pages`, `/retention`, `/realtime`.

Authorised by the site's Bearer key, or by a logged-in session of a user who may see the
site (staff, or one of its owners: see analytics.queries.access).
Query parameters are checked by params.py: every mistake is a 400 naming the parameter.
"""
from datetime import UTC, datetime

from .. import dimensions, queries
from ..models import Funnel
from ..store.connection import get_redis
from .http import ApiError, json_errors, json_response, methods
from .params import choice_param, date_range, filters_param, float_param, int_param, site_param

MAX_LIMIT = 1000  # pages per answer
PROPS = "event:props:"  # property=event:props:NAME breaks down a custom property (Plausible's name)
PROPERTIES = (*dimensions.ALL, "page", "goal", f"{PROPS}<name>")
VISIT_ROW = ("visitors", "visits", "pageviews", "bounce_rate", "visit_duration", "views_per_visit")
BREAKDOWN_METRICS = {  # what each kind of row has (metrics= picks among them)
    **{d: VISIT_ROW for d in dimensions.VISIT_DIMENSIONS},
    dimensions.EXIT: ("visits",),
    "page": ("visitors", "pageviews"),
    "goal": ("visitors", "events", "conversion_rate", "revenue"),
}


@methods("GET")
@json_errors
def timeseries(request):
    site = site_param(request)
    start, end = date_range(request, site)
    interval = choice_param(request, "interval", ("hour", "day", "week", "month"), "day")
    allowed = {"hour": queries.HOUR_METRICS, "day": (*queries.METRICS, *queries.VISIT_METRICS)}.get(
        interval, (*queries.PERIOD_METRICS, *queries.VISIT_METRICS)
    )
    defaults = {"hour": queries.HOUR_METRICS, "day": queries.DEFAULT_METRICS}.get(interval, queries.PERIOD_METRICS)
    wanted = request.GET.get("metrics") or ",".join(defaults)
    if interval == "hour" and (end - start).days + 1 > queries.MAX_HOUR_DAYS:
        raise ApiError(400, f"interval=hour: at most {queries.MAX_HOUR_DAYS} days")
    metrics = [m.strip() for m in wanted.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in allowed]
    if unknown or not metrics:
        raise ApiError(
            400,
            f"metrics: unknown {', '.join(unknown) or '(none)'} for interval={interval}; choose from {', '.join(allowed)}",
        )
    filters = filters_param(request)
    extra = {}
    if filters and interval == "hour":
        raise ApiError(400, "filters: not available with interval=hour (filters count visitors by day)")
    compare = request.GET.get("compare") or None
    if compare is not None and compare not in queries.COMPARISONS:
        raise ApiError(400, f"compare: must be one of {', '.join(queries.COMPARISONS)}")

    def series(first, last):
        if interval == "hour":
            return queries.hourly(get_redis(), site, first, last, metrics), False
        if filters:
            return queries.filtered.timeseries(get_redis(), site, filters, first, last, metrics, interval)
        return queries.timeseries(get_redis(), site, first, last, metrics, interval), False

    results, estimate = series(start, end)
    if filters:
        extra = _filtered(filters, estimate)
    if compare:
        before_start, before_end = queries.previous(compare, start, end)
        before, estimated = series(before_start, before_end)
        extra["comparison"] = {"from": before_start.isoformat(), "to": before_end.isoformat(), "results": before}
        if filters:
            extra["estimate"] = estimate or estimated
    return json_response(
        {"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), "interval": interval, **extra, "results": results}
    )


def _no_filters(request, endpoint: str):
    """An endpoint that cannot filter says so, rather than answer for everyone."""
    if request.GET.get("filters"):
        raise ApiError(400, f"filters: not available on /{endpoint} (its visitors are counted in HyperLogLogs, which cannot be intersected exactly)")


def _filtered(filters, estimate: bool) -> dict:
    """What a filtered answer says about itself: its filters, and whether any number in it
    is an estimate (a value past the day's bitmaps: analytics.queries.segments)."""
    return {"filters": ";".join(str(f) for f in filters), "estimate": estimate}


@methods("GET")
@json_errors
def aggregate(request):
    """A period's headline numbers, Plausible's shape; `compare=previous_period` adds changes."""
    site = site_param(request)
    start, end = date_range(request, site)
    wanted = request.GET.get("metrics") or ",".join(queries.AGGREGATE_METRICS)
    metrics = [m.strip() for m in wanted.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in queries.AGGREGATE_METRICS]
    if unknown or not metrics:
        raise ApiError(400, f"metrics: unknown {', '.join(unknown) or '(none)'}; choose from {', '.join(queries.AGGREGATE_METRICS)}")
    compare = request.GET.get("compare") or None
    if compare is not None and compare not in queries.COMPARISONS:
        raise ApiError(400, f"compare: must be one of {', '.join(queries.COMPARISONS)}")
    filters, extra = filters_param(request), {}
    if filters:
        results, estimate = queries.filtered.aggregate(get_redis(), site, filters, start, end, metrics, compare)
        extra = _filtered(filters, estimate)
    else:
        results = queries.aggregate(get_redis(), site, start, end, metrics, compare)
    if compare:
        before_start, before_end = queries.previous(compare, start, end)
        extra["compared"] = {"from": before_start.isoformat(), "to": before_end.isoformat()}
    return json_response({"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), **extra, "results": results})


@methods("GET")
@json_errors
def breakdown(request):
    """Rows by one visit dimension (`property`), most visitors first, paged; or by page,
    goal or custom property. `search` keeps the values containing it before paging, so
    `total` counts those. Regions and cities without a city database: a 409, as `near`."""
    site = site_param(request)
    start, end = date_range(request, site)
    prop = _property(request)
    limit = int_param(request, "limit", 10, 1, MAX_LIMIT)
    page = int_param(request, "page", 1, 1, 10_000)
    search = _search(request)
    r = get_redis()
    filters = filters_param(request)
    if filters:
        results, total, estimate = _filtered_breakdown(r, site, filters, start, end, prop, request)
        _refuse_cities_without_a_database(r, site, start, end, prop, total)
        body = {"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), "property": prop, "page": page,
                **_filtered(filters, estimate), "results": results[(page - 1) * limit : page * limit], "total": total}
        return json_response(body)
    if prop.startswith(PROPS):
        event = request.GET.get("event") or None
        results, total = queries.properties(r, site, start, end, prop[len(PROPS) :][:300], event, limit, page, search)
    elif prop == "goal":
        rows = queries.goals(r, site, start, end, queries.summary(r, site, start, end)["visitors"], search)
        results, total = rows[(page - 1) * limit : page * limit], len(rows)
    elif prop == "page":
        rows, total = queries.ranked_pages(r, site, start, end, limit * page, search)
        results = [{"page": row["page"], "visitors": row["visitors"], "pageviews": row["pageviews"]}
                   for row in rows[(page - 1) * limit :]]
    else:
        results, total = queries.breakdown(r, site, start, end, prop, limit, page, search)
        _refuse_cities_without_a_database(r, site, start, end, prop, total)
    wanted = [m.strip() for m in request.GET.get("metrics", "").split(",") if m.strip()]
    if wanted:
        name = prop.removeprefix(PROPS)
        available = BREAKDOWN_METRICS.get(prop, ("visitors", "events"))  # (the last: custom properties)
        unknown = [m for m in wanted if m not in available]
        if unknown:
            raise ApiError(400, f"metrics: {', '.join(unknown)} not available for property={prop}; choose from {', '.join(available)}")
        results = [{name: row[name], **{m: row.get(m) for m in wanted}} for row in results]
    return json_response({"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), "property": prop, "page": page,
                          "results": results, "total": total})


def _refuse_cities_without_a_database(r, site, start, end, prop: str, total: int):
    """An empty region or city list without a city database is a 409, as `near` is: it
    would read as "no visitor came from any region or city" (queries.needs_city_database
    decides, as it does the exports' note)."""
    if queries.needs_city_database(r, site, start, end, prop, total):
        raise ApiError(409, f"property={prop}: no city database on this server. {queries.NO_CITY_DATABASE}")


def _property(request) -> str:
    """The breakdown's property by Tally's name, which the answer and its rows then use:
    Plausible's names (visit:source, event:page, event:goal) are taken as filters take
    them; event:props:NAME is a custom property, whose own name has no prefix to drop."""
    raw = request.GET.get("property", "")
    if raw.startswith(PROPS) and len(raw) > len(PROPS):
        return raw
    prop = queries.segments.unprefixed(raw)
    if prop not in PROPERTIES:
        raise ApiError(400, f"property: must be one of {', '.join(PROPERTIES)} (Plausible's visit: and event: prefixes too)")
    return prop


def _search(request) -> str:
    """`search`: only the values containing this text, case-insensitive ("" keeps all)."""
    return request.GET.get("search", "")[:200]


def _filtered_breakdown(r, site, filters, start, end, prop: str, request) -> tuple[list[dict], int, bool]:
    """Every row of a breakdown for a filtered audience (visitors only: the other counts
    exist per value, not per combination), and whether any is estimated."""
    search = _search(request)
    wanted = [m.strip() for m in request.GET.get("metrics", "").split(",") if m.strip()]
    allowed = ("visitors", "conversion_rate") if prop == "goal" else ("visitors",)
    if any(m not in allowed for m in wanted):
        raise ApiError(400, f"metrics: under filters, rows have {', '.join(allowed)} only")
    if prop.startswith(PROPS) or prop == dimensions.EXIT:
        raise ApiError(400, f"filters: not available with property={prop} (its rows count events or visits, not visitors)")
    if prop == "goal":
        summary, _ = queries.filtered.summary(r, site, filters, start, end)
        rows, estimate = queries.filtered.goals(r, site, filters, start, end, summary["visitors"], search)
        return rows, len(rows), estimate
    if prop == "page":
        ranked, _ = queries.ranked_pages(r, site, start, end, queries.filtered.MAX_ROWS, search)
        candidates = [row["page"] for row in ranked]
    else:
        unfiltered, _ = queries.breakdown(r, site, start, end, prop, queries.filtered.MAX_ROWS, 1, search)
        candidates = [row[prop] for row in unfiltered]
    rows, estimate = queries.filtered.breakdown(r, site, filters, start, end, prop, candidates)
    results = [{prop: row["value"], "visitors": row["visitors"], **({"estimate": True} if row["estimate"] else {})} for row in rows]
    return results, len(results), estimate


@methods("GET")
@json_errors
def funnel(request):
    """A funnel's steps over the range: visitors who reached each (analytics.queries.funnels)."""
    site = site_param(request)
    start, end = date_range(request, site)
    name = request.GET.get("funnel", "")
    found = Funnel.objects.filter(site_id=site.id, name=name).first()
    if found is None:
        names = list(Funnel.objects.filter(site_id=site.id).values_list("name", flat=True))
        raise ApiError(400, f"funnel: no funnel {name[:120]!r} on this site; it has: {', '.join(names) or '(none: add one in the admin)'}")
    filters = filters_param(request)
    steps, estimate = queries.funnel(get_redis(), site, found, start, end, filters)
    return json_response({"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), "funnel": found.name,
                          **_filtered(filters, estimate), "steps": steps})


@methods("GET")
@json_errors
def near(request):
    """Visitors within `km` of a place (needs a city database: TALLY_GEO_CITY_DB). Without
    one, a 409 says so, unless the range has cities stored while one was configured: an
    empty answer would read as "nobody came from there". Days whose locations have expired
    are left out and named; a range of such days only is a 410, not the 409: the cities
    were recorded, their places are no longer kept."""
    site = site_param(request)
    start, end = date_range(request, site)
    _no_filters(request, "near")
    latitude = float_param(request, "lat", -85.05, 85.05)
    longitude = float_param(request, "lon", -180.0, 180.0)
    km = float_param(request, "km", 0.001, 20_000.0)
    r = get_redis()
    if not queries.city_database() and not queries.city_values_stored(r, site, start, end, "city"):
        raise ApiError(409, f"near: no city database on this server. {queries.NO_CITY_DATABASE}")
    result = queries.visitors_near(r, site, start, end, longitude, latitude, km)
    if not result["counted"]:
        raise ApiError(410, f"near: {result['message']}")
    return json_response({"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), "lat": latitude, "lon": longitude,
                          "km": km, **result})


@methods("GET")
@json_errors
def retention(request):
    site = site_param(request)
    if site.daily_salt:
        raise ApiError(400, "retention needs a stable visitor identity; this site rotates its salt daily")
    unit = choice_param(request, "unit", ("day", "week"), "day")
    top = queries.DAY_PERIODS if unit == "day" else queries.WEEK_PERIODS
    periods = int_param(request, "periods", top, 0, top)
    start, end = date_range(request, site)
    filters, extra = filters_param(request), {}
    if filters:
        cohorts, estimate = queries.filtered.retention(get_redis(), site, filters, unit, start, end, periods)
        extra = _filtered(filters, estimate)
    else:
        cohorts = queries.retention(get_redis(), site, unit, start, end, periods)
    return json_response(
        {"site": site.domain, "unit": unit, "from": start.isoformat(), "to": end.isoformat(), "periods": periods, **extra,
         "cohorts": cohorts}
    )


@methods("GET")
@json_errors
def pages(request):
    site = site_param(request)
    start, end = date_range(request, site)
    limit = int_param(request, "limit", 10, 1, MAX_LIMIT)
    filters, extra = filters_param(request), {}
    r = get_redis()
    if filters:
        candidates = [row["page"] for row in queries.top_pages(r, site, start, end, max(limit, queries.filtered.MAX_ROWS))]
        rows, estimate = queries.filtered.breakdown(r, site, filters, start, end, "page", candidates)
        results = [{"page": row["value"], "visitors": row["visitors"], "pageviews": None,
                    **({"estimate": True} if row["estimate"] else {})} for row in rows[:limit]]
        extra = _filtered(filters, estimate)
    else:
        results = queries.top_pages(r, site, start, end, limit)
    return json_response({"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), **extra, "results": results})


@methods("GET")
@json_errors
def realtime(request):
    site = site_param(request)
    _no_filters(request, "realtime")
    visitors = queries.realtime_visitors(get_redis(), site, datetime.now(UTC))
    return json_response({"site": site.domain, "visitors": visitors, "minutes": queries.REALTIME_MINUTES})
