"""Read API: `GET /api/v1/stats/timeseries`, `/aggregate`, `/breakdown`, `/near`, `/pages`, `/retention`,
`/dropped`, `/realtime`.

Authorised by the site's Bearer key, or by a logged-in session of a user who may see the
site (staff, or one of its owners: see analytics.queries.access).
Every query parameter is read through its declaration in params.py: every mistake is a
400 naming the parameter. The answers' shapes are responses.py's models (the document's,
checked against real answers by tests/test_api_answers.py).
"""

from datetime import UTC, datetime

from .. import dimensions, queries
from ..models import Exclusion, Funnel
from ..store.connection import get_redis
from . import params
from .http import ApiError, json_errors, json_response, methods
from .params import PROPS, date_range

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
    site = params.SITE.read(request)
    start, end = date_range(request, site)
    interval = params.INTERVAL.read(request)
    if interval == "hour" and (end - start).days + 1 > queries.MAX_HOUR_DAYS:
        raise ApiError(400, f"interval=hour: at most {queries.MAX_HOUR_DAYS} days")
    metrics = params.SERIES_METRICS.read(request, interval)
    filters = params.FILTERS.read(request)
    extra = {}
    if filters and interval == "hour":
        raise ApiError(400, "filters: not available with interval=hour (filters count visitors by day)")
    compare = params.COMPARE_SERIES.read(request)

    result = queries.run(
        get_redis(), queries.Query(site, start, end, "timeseries", tuple(metrics), filters, compare, interval=interval)
    )
    results = result.rows
    if filters:
        extra = _filtered(result)
    if result.comparison is not None:
        before_start, before_end = result.comparison.meta["compared"]
        extra["comparison"] = {
            "from": before_start.isoformat(),
            "to": before_end.isoformat(),
            "results": result.comparison.rows,
        }
    return json_response(
        {
            "site": site.domain,
            "from": start.isoformat(),
            "to": end.isoformat(),
            "interval": interval,
            **extra,
            "results": results,
        }
    )


def _no_filters(request, endpoint: str):
    """An endpoint that cannot filter says so, rather than answer for everyone."""
    if params.FILTERS.given(request):
        raise ApiError(
            400,
            f"filters: not available on /{endpoint} "
            "(its visitors are counted in HyperLogLogs, which cannot be intersected exactly)",
        )


def _filtered(result) -> dict:
    """What a filtered answer says about itself: its filters, and whether any number in it
    is an estimate (each says why: its row's or metric's "estimate")."""
    return {"filters": result.meta["filters"], "estimate": result.estimate}


@methods("GET")
@json_errors
def aggregate(request):
    """A period's headline numbers, Plausible's shape; `compare=previous_period` adds changes."""
    site = params.SITE.read(request)
    start, end = date_range(request, site)
    metrics = params.TOTALS_METRICS.read(request)
    compare = params.COMPARE_TOTALS.read(request)
    filters, extra = params.FILTERS.read(request), {}
    result = queries.run(get_redis(), queries.Query(site, start, end, "aggregate", tuple(metrics), filters, compare))
    if filters:
        extra = _filtered(result)
    if compare:
        before_start, before_end = result.meta["compared"]
        extra["compared"] = {"from": before_start.isoformat(), "to": before_end.isoformat()}
    return json_response(
        {"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), **extra, "results": result.totals}
    )


@methods("GET")
@json_errors
def breakdown(request):
    """Rows by one visit dimension (`property`), most visitors first, paged; or by page,
    goal or custom property. `search` keeps the values containing it before paging, so
    `total` counts those. Regions and cities without a city database: a 409, as `near`."""
    site = params.SITE.read(request)
    start, end = date_range(request, site)
    prop = params.PROPERTY.read(request)
    limit, page = params.LIMIT.read(request), params.PAGE.read(request)
    search, wanted = params.SEARCH.read(request), params.ROW_METRICS.read(request)
    r = get_redis()
    filters = params.FILTERS.read(request)
    if filters:
        _check_filtered_breakdown(prop, wanted)
    query = queries.Query(
        site,
        start,
        end,
        "breakdown",
        filters=filters,
        dimension=prop,
        limit=limit,
        page=page,
        search=search,
        event=params.EVENT.read(request) or None,
    )
    result = queries.run(r, query)
    results, total = result.rows, result.meta["total"]
    if prop in dimensions.ALL:
        _refuse_cities_without_a_database(r, site, start, end, prop, total)
    if filters:
        body = {
            "site": site.domain,
            "from": start.isoformat(),
            "to": end.isoformat(),
            "property": prop,
            "page": page,
            **_filtered(result),
            "results": results,
            "total": total,
        }
        return json_response(body)
    if prop == "page":
        results = [{"page": row["page"], "visitors": row["visitors"], "pageviews": row["pageviews"]} for row in results]
    if wanted:
        name = prop.removeprefix(PROPS)
        available = BREAKDOWN_METRICS.get(prop, ("visitors", "events"))  # (the last: custom properties)
        unknown = [m for m in wanted if m not in available]
        if unknown:
            raise ApiError(
                400,
                f"metrics: {', '.join(unknown)} not available for property={prop}; choose from {', '.join(available)}",
            )
        results = [{name: row[name], **{m: row.get(m) for m in wanted}} for row in results]
    return json_response(
        {
            "site": site.domain,
            "from": start.isoformat(),
            "to": end.isoformat(),
            "property": prop,
            "page": page,
            "results": results,
            "total": total,
        }
    )


def _refuse_cities_without_a_database(r, site, start, end, prop: str, total: int):
    """An empty region or city list without a city database is a 409, as `near` is: it
    would read as "no visitor came from any region or city" (queries.needs_city_database
    decides, as it does the exports' note)."""
    if queries.needs_city_database(r, site, start, end, prop, total):
        raise ApiError(409, f"property={prop}: no city database on this server. {queries.NO_CITY_DATABASE}")


def _check_filtered_breakdown(prop: str, wanted: list[str]):
    """A filtered audience's rows have visitors only (goals: and conversion rates): the
    other counts exist per value, not per combination. Rows that count events or visits
    (custom properties, exit pages) cannot be filtered at all."""
    allowed = ("visitors", "conversion_rate") if prop == "goal" else ("visitors",)
    if any(m not in allowed for m in wanted):
        raise ApiError(400, f"metrics: under filters, rows have {', '.join(allowed)} only")
    if prop.startswith(PROPS) or prop == dimensions.EXIT:
        raise ApiError(
            400, f"filters: not available with property={prop} (its rows count events or visits, not visitors)"
        )


@methods("GET")
@json_errors
def funnel(request):
    """A funnel's steps over the range: visitors who reached each (analytics.queries.funnels)."""
    site = params.SITE.read(request)
    start, end = date_range(request, site)
    name = params.FUNNEL.read(request)
    found = Funnel.objects.filter(site_id=site.id, name=name).first()
    if found is None:
        names = list(Funnel.objects.filter(site_id=site.id).values_list("name", flat=True))
        raise ApiError(
            400,
            f"funnel: no funnel {name[:120]!r} on this site; "
            f"it has: {', '.join(names) or '(none: add one in the admin)'}",
        )
    filters = params.FILTERS.read(request)
    steps, estimate = queries.funnel(get_redis(), site, found, start, end, filters)
    return json_response(
        {
            "site": site.domain,
            "from": start.isoformat(),
            "to": end.isoformat(),
            "funnel": found.name,
            "filters": ";".join(str(f) for f in filters),
            "estimate": estimate,
            "steps": steps,
        }
    )


@methods("GET")
@json_errors
def near(request):
    """Visitors within `km` of a place (needs a city database: TALLY_GEO_CITY_DB). Without
    one, a 409 says so, unless the range has cities stored while one was configured: an
    empty answer would read as "nobody came from there". Days whose locations have expired
    are left out and named; a range of such days only is a 410, not the 409: the cities
    were recorded, their places are no longer kept."""
    site = params.SITE.read(request)
    start, end = date_range(request, site)
    _no_filters(request, "near")
    latitude, longitude = params.LATITUDE.read(request), params.LONGITUDE.read(request)
    km = params.RADIUS.read(request)
    r = get_redis()
    if not queries.city_database() and not queries.city_values_stored(r, site, start, end, "city"):
        raise ApiError(409, f"near: no city database on this server. {queries.NO_CITY_DATABASE}")
    result = queries.visitors_near(r, site, start, end, longitude, latitude, km)
    if not result["counted"]:
        raise ApiError(410, f"near: {result['message']}")
    return json_response(
        {
            "site": site.domain,
            "from": start.isoformat(),
            "to": end.isoformat(),
            "lat": latitude,
            "lon": longitude,
            "km": km,
            **result,
        }
    )


@methods("GET")
@json_errors
def retention(request):
    site = params.SITE.read(request)
    if site.daily_salt:
        raise ApiError(400, "retention needs a stable visitor identity; this site rotates its salt daily")
    unit = params.UNIT.read(request)
    periods = params.PERIODS.read(request, unit)
    start, end = date_range(request, site)
    filters = params.FILTERS.read(request)
    result = queries.run(
        get_redis(), queries.Query(site, start, end, "retention", filters=filters, interval=unit, periods=periods)
    )
    return json_response(
        {
            "site": site.domain,
            "unit": unit,
            "from": start.isoformat(),
            "to": end.isoformat(),
            "periods": periods,
            **(_filtered(result) if filters else {}),
            "cohorts": result.rows,
        }
    )


@methods("GET")
@json_errors
def dropped(request):
    """What the site did not count over the range, by reason, beside the switches that decide it."""
    site = params.SITE.read(request)
    _no_filters(request, "dropped")
    start, end = date_range(request, site)
    result = queries.run(get_redis(), queries.Query(site, start, end, "dropped"))
    return json_response(
        {
            "site": site.domain,
            "from": start.isoformat(),
            "to": end.isoformat(),
            "total": sum(result.totals.values()),
            "reasons": result.totals,
            "switches": switches(site),
            "days": result.rows,
        }
    )


def switches(site) -> dict:
    """The site's settings that decide what is dropped (the answer names them as the settings page does)."""
    return {
        "drop_crawlers": site.drop_crawlers,
        "drop_datacenters": site.drop_datacenters,
        "drop_referrer_spam": site.drop_referrer_spam,
        "pattern_pageviews": site.pattern_pageviews,
        "exclusions": Exclusion.objects.filter(site_id=site.id).count(),  # (read sites carry no exclusions)
    }


@methods("GET")
@json_errors
def pages(request):
    site = params.SITE.read(request)
    start, end = date_range(request, site)
    limit = params.PAGES.read(request)
    filters = params.FILTERS.read(request)
    result = queries.run(
        get_redis(), queries.Query(site, start, end, "breakdown", filters=filters, dimension="page", limit=limit)
    )
    results = [{"pageviews": None, **row} for row in result.rows] if filters else result.rows
    return json_response(
        {
            "site": site.domain,
            "from": start.isoformat(),
            "to": end.isoformat(),
            **(_filtered(result) if filters else {}),
            "results": results,
        }
    )


@methods("GET")
@json_errors
def realtime(request):
    site = params.SITE.read(request)
    _no_filters(request, "realtime")
    visitors = queries.realtime_visitors(get_redis(), site, datetime.now(UTC))
    return json_response({"site": site.domain, "visitors": visitors, "minutes": queries.REALTIME_MINUTES})
