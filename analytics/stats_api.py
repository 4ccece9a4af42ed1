"""Read API: `GET /api/v1/stats/timeseries`, `/pages`, `/realtime`.

Authorised by the site's Bearer key, or by a logged-in session of a user who may see the
site (staff, or one of its owners: see access.py).
Query parameters are checked here and every mistake is a 400 naming the parameter.
"""
from datetime import UTC, date, datetime, timedelta


from . import access, queries, sites
from .connection import get_redis
from .http import ApiError, bearer_site, json_errors, json_response, methods

MAX_RANGE_DAYS = 731
DEFAULT_RANGE_DAYS = 30
MAX_LIMIT = 1000


def _site(request) -> sites.SiteInfo:
    domain = request.GET.get("site", "").strip().lower()
    if not domain:
        raise ApiError(400, "missing parameter: site (the site's domain)")
    if request.META.get("HTTP_AUTHORIZATION"):
        site = bearer_site(request)
        if site.domain != domain:
            raise ApiError(403, f"this API key is not for site {domain!r}")
        return site
    if request.user.is_authenticated:
        site = access.site_for_user(request.user, domain)
        if site is None:
            raise ApiError(404, f"unknown site: {domain!r}")
        return sites.SiteInfo.from_model(site)
    raise ApiError(401, "missing API key: send 'Authorization: Bearer <key>'", {"WWW-Authenticate": "Bearer"})


def _date(request, name: str, default: date) -> date:
    value = request.GET.get(name)
    if not value:
        return default
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ApiError(400, f"{name}: not a date, expected YYYY-MM-DD") from None


def _range(request, site) -> tuple[date, date]:
    end = _date(request, "to", site.today())
    start = _date(request, "from", end - timedelta(days=DEFAULT_RANGE_DAYS - 1))
    if start > end:
        raise ApiError(400, "from: must not be after to")
    if (end - start).days + 1 > MAX_RANGE_DAYS:
        raise ApiError(400, f"range too long: at most {MAX_RANGE_DAYS} days")
    return start, end


def _int(request, name: str, default: int, low: int, high: int) -> int:
    value = request.GET.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ApiError(400, f"{name}: not an integer") from None
    if not low <= number <= high:
        raise ApiError(400, f"{name}: must be between {low} and {high}")
    return number


def _choice(request, name: str, choices: tuple, default: str) -> str:
    value = request.GET.get(name) or default
    if value not in choices:
        raise ApiError(400, f"{name}: must be one of {', '.join(choices)}")
    return value


@methods("GET")
@json_errors
def timeseries(request):
    site = _site(request)
    start, end = _range(request, site)
    interval = _choice(request, "interval", ("day", "week", "month"), "day")
    allowed = queries.METRICS if interval == "day" else queries.PERIOD_METRICS
    wanted = request.GET.get("metrics") or ",".join(queries.DEFAULT_METRICS if interval == "day" else allowed)
    metrics = [m.strip() for m in wanted.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in allowed]
    if unknown or not metrics:
        raise ApiError(
            400,
            f"metrics: unknown {', '.join(unknown) or '(none)'} for interval={interval}; choose from {', '.join(allowed)}",
        )
    results = queries.timeseries(get_redis(), site, start, end, metrics, interval)
    return json_response(
        {"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), "interval": interval, "results": results}
    )


@methods("GET")
@json_errors
def retention(request):
    site = _site(request)
    if site.daily_salt:
        raise ApiError(400, "retention needs a stable visitor identity; this site rotates its salt daily")
    unit = _choice(request, "unit", ("day", "week"), "day")
    top = queries.DAY_PERIODS if unit == "day" else queries.WEEK_PERIODS
    periods = _int(request, "periods", top, 0, top)
    start, end = _range(request, site)
    cohorts = queries.retention(get_redis(), site, unit, start, end, periods)
    return json_response(
        {"site": site.domain, "unit": unit, "from": start.isoformat(), "to": end.isoformat(), "periods": periods, "cohorts": cohorts}
    )


@methods("GET")
@json_errors
def pages(request):
    site = _site(request)
    start, end = _range(request, site)
    limit = _int(request, "limit", 10, 1, MAX_LIMIT)
    results = queries.top_pages(get_redis(), site, start, end, limit)
    return json_response({"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), "results": results})


@methods("GET")
@json_errors
def realtime(request):
    site = _site(request)
    visitors = queries.realtime_visitors(get_redis(), site, datetime.now(UTC))
    return json_response({"site": site.domain, "visitors": visitors, "minutes": queries.REALTIME_MINUTES})
