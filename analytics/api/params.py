"""Query parameters of the read endpoints, checked in one place: every mistake is a 400
naming the parameter."""

from datetime import date, timedelta

from .. import sites
from ..capture import inbox
from ..periods import EARLIEST_DAY, named_range, out_of_bounds
from ..queries import access, segments
from ..store.connection import get_redis
from .http import ApiError, bearer_site

MAX_RANGE_DAYS = 731
DEFAULT_RANGE_DAYS = 30


def site_param(request) -> sites.SiteInfo:
    """The `site` a read request names, if the request may read it: by the site's Bearer
    key, or by a session of a user who may see the site."""
    domain = request.GET.get("site", "").strip().lower()
    if not domain:
        raise ApiError(400, "missing parameter: site (the site's domain)")
    if request.META.get("HTTP_AUTHORIZATION"):
        site = bearer_site(request)
        if site.domain != domain:
            raise ApiError(403, f"this API key is not for site {domain!r}")
    elif request.user.is_authenticated:
        found = access.site_for_user(request.user, domain)
        if found is None:
            raise ApiError(404, f"unknown site: {domain!r}")
        site = sites.SiteInfo.from_model(found)
    else:
        raise ApiError(401, "missing API key: send 'Authorization: Bearer <key>'", {"WWW-Authenticate": "Bearer"})
    inbox.flush(get_redis(), site)  # (the single events acknowledged before this read are in its numbers)
    return site


def _date(request, name: str, default: date, today: date) -> date:
    value = request.GET.get(name)
    if not value:
        return default
    return _day(value, name, today)


def _day(value: str, name: str, today: date) -> date:
    try:
        day = date.fromisoformat(value.strip())
    except ValueError:
        raise ApiError(400, f"{name}: not a date, expected YYYY-MM-DD") from None
    problem = out_of_bounds(day, today)
    if problem:
        raise ApiError(400, f"{name}: {problem}")
    return day


def _named_period(request, today: date) -> tuple[date, date]:
    """`period` as Plausible's Stats API v1 takes it (and the dashboard's names)."""
    name, given = request.GET["period"].strip(), request.GET.get("date", "").strip()
    if request.GET.get("from") or request.GET.get("to"):
        raise ApiError(400, "period: give either period (and date) or from and to, not both")
    if name == "custom":
        first, comma, last = given.partition(",")
        if not comma:
            raise ApiError(400, "date: period=custom needs date=YYYY-MM-DD,YYYY-MM-DD")
        start, end = _day(first, "date", today), _day(last, "date", today)
        if start > end:
            raise ApiError(400, "date: FROM must not be after TO")
        return start, end
    anchor = _day(given, "date", today) if given else today
    try:
        start, end = named_range(name, anchor, today)
    except ValueError as error:
        raise ApiError(400, f"period: {error}") from None
    if start < EARLIEST_DAY:
        raise ApiError(400, f"date: period={name} would start before {EARLIEST_DAY.isoformat()}")
    return start, end


def date_range(request, site) -> tuple[date, date]:
    """`from` and `to` (the site's local dates), or Plausible's `period` (`date`: the day
    a named period ends around, or `period=custom&date=FROM,TO`): the last 30 days by
    default."""
    today = site.today()
    if request.GET.get("period"):
        start, end = _named_period(request, today)
    else:
        end = _date(request, "to", today, today)
        start = _date(request, "from", end - timedelta(days=DEFAULT_RANGE_DAYS - 1), today)
    if start > end:
        raise ApiError(400, "from: must not be after to")
    if (end - start).days + 1 > MAX_RANGE_DAYS:
        raise ApiError(400, f"range too long: at most {MAX_RANGE_DAYS} days")
    return start, end


def int_param(request, name: str, default: int, low: int, high: int) -> int:
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


def float_param(request, name: str, low: float, high: float) -> float:
    raw = request.GET.get(name)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ApiError(400, f"{name}: a number from {low:g} to {high:g} is required") from None
    if not low <= value <= high:  # (NaN fails this too)
        raise ApiError(400, f"{name}: must be from {low:g} to {high:g}")
    return value


def choice_param(request, name: str, choices: tuple, default: str) -> str:
    value = request.GET.get(name) or default
    if value not in choices:
        raise ApiError(400, f"{name}: must be one of {', '.join(choices)}")
    return value


def filters_param(request) -> tuple:
    """`filters=source==Google;country!=DE` (analytics.queries.segments), () when absent."""
    try:
        return segments.parse(request.GET.get("filters", ""))
    except ValueError as e:
        raise ApiError(400, f"filters: {e}") from None
