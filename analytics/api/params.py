"""The API's parameters, each declared once: how a view reads it (every mistake is a 400
naming the parameter) and how the OpenAPI document describes it (openapi.py takes each
parameter's entry from here: `doc()`), so that the bounds, the choices and the limits the
document states are the ones the code applies. Every query parameter a view reads is read
through its declaration below; the path and header parameters are declared here for the
document, and read where Django hands them over.
"""

from datetime import date, timedelta

from .. import dimensions, sites
from ..capture import inbox
from ..periods import EARLIEST_DAY, NAMED_PERIODS, named_range, out_of_bounds
from ..queries import (
    AGGREGATE_METRICS,
    COMPARISONS,
    DAY_PERIODS,
    DEFAULT_METRICS,
    HOUR_METRICS,
    METRICS,
    PERIOD_METRICS,
    VISIT_METRICS,
    WEEK_PERIODS,
    access,
    segments,
)
from ..reports import tables
from ..store.connection import get_redis
from .http import ApiError, bearer_site

MAX_RANGE_DAYS = 731
DEFAULT_RANGE_DAYS = 30
PROPS = "event:props:"  # property=event:props:NAME breaks down a custom property (Plausible's name)


class Param:
    """A parameter (`where`: query, path or header): its name, its description and JSON
    schema in the API document."""

    def __init__(self, name: str, description: str, schema: dict, required: bool = False, where: str = "query"):
        self.name, self.description, self.schema, self.required = name, description, schema, required
        self.where = where

    def doc(self) -> dict:
        """The parameter's entry in the OpenAPI document."""
        return {
            "name": self.name,
            "in": self.where,
            "required": self.required,
            "description": self.description,
            "schema": self.schema,
        }


class IntParam(Param):
    """A whole number from `low` to `high`, `default` when absent."""

    def __init__(self, name: str, description: str, default: int, low: int, high: int):
        super().__init__(name, description, {"type": "integer", "minimum": low, "maximum": high, "default": default})
        self.default, self.low, self.high = default, low, high

    def read(self, request) -> int:
        return int_param(request, self.name, self.default, self.low, self.high)


class FloatParam(Param):
    """A number from `low` to `high`, required."""

    def __init__(self, name: str, description: str, low: float, high: float, open_low: bool = False):
        low_bound = {"exclusiveMinimum": 0} if open_low else {"minimum": low}
        super().__init__(name, description, {"type": "number", **low_bound, "maximum": high}, required=True)
        self.low, self.high = low, high

    def read(self, request) -> float:
        return float_param(request, self.name, self.low, self.high)


class ChoiceParam(Param):
    """One of `choices`, `default` when absent."""

    def __init__(self, name: str, description: str, choices: tuple, default: str):
        super().__init__(name, description, {"type": "string", "enum": list(choices), "default": default})
        self.choices, self.default = choices, default

    def read(self, request) -> str:
        return choice_param(request, self.name, self.choices, self.default)


class OptionalChoiceParam(Param):
    """One of `choices`, or None when absent."""

    def __init__(self, name: str, description: str, choices: tuple):
        super().__init__(name, description, {"type": "string", "enum": list(choices)})
        self.choices = choices

    def read(self, request) -> str | None:
        value = request.GET.get(self.name) or None
        if value is not None and value not in self.choices:
            raise ApiError(400, f"{self.name}: must be one of {', '.join(self.choices)}")
        return value


class SiteParam(Param):
    """`site`, and whether the request may read it (site_param)."""

    def read(self, request) -> sites.SiteInfo:
        return site_param(request)


class FiltersParam(Param):
    """`filters`, parsed (filters_param); () when absent."""

    def read(self, request) -> tuple:
        return filters_param(request)

    def given(self, request) -> bool:
        """Whether the request sends any (an endpoint that cannot filter refuses them)."""
        return bool(request.GET.get(self.name))


class TextParam(Param):
    """Text, "" when absent; past `longest` characters it is cut, not refused."""

    def __init__(self, name: str, description: str, required: bool = False, longest: int | None = None):
        super().__init__(name, description, {"type": "string"}, required=required)
        self.longest = longest

    def read(self, request) -> str:
        return request.GET.get(self.name, "")[: self.longest]


class IdParam(Param):
    """Required text of 1 to `longest` characters, not all blank."""

    def __init__(self, name: str, description: str, longest: int):
        super().__init__(name, description, {"type": "string", "minLength": 1, "maxLength": longest}, required=True)
        self.longest = longest

    def read(self, request) -> str:
        value = request.GET.get(self.name, "")
        if not value.strip() or len(value) > self.longest:
            raise ApiError(400, f"{self.name}: required, at most {self.longest} characters")
        return value


class FlagParam(Param):
    """On when the parameter is `value`; anything else, or nothing, is off."""

    def __init__(self, name: str, description: str, value: str):
        super().__init__(name, description, {"type": "string", "enum": [value]})
        self.value = value

    def read(self, request) -> bool:
        return request.GET.get(self.name) == self.value


class NamesParam(Param):
    """Comma-separated names (blanks dropped), [] when absent: the endpoint checks them
    against what it can answer."""

    def __init__(self, name: str, description: str):
        super().__init__(name, description, {"type": "string"})

    def read(self, request) -> list[str]:
        return [n.strip() for n in request.GET.get(self.name, "").split(",") if n.strip()]


class MetricsParam(NamesParam):
    """Metric names from the choices of an interval (timeseries; "" where there is one
    list), the interval's defaults when absent; an unknown name, or none, is a 400 listing
    the choices."""

    def __init__(self, name: str, description: str, choices: dict[str, tuple], defaults: dict[str, tuple]):
        super().__init__(name, description)
        self.choices, self.defaults = choices, defaults

    def read(self, request, interval: str = "") -> list[str]:
        allowed = self.choices[interval]
        metrics = super().read(request) if request.GET.get(self.name) else list(self.defaults[interval])
        unknown = [m for m in metrics if m not in allowed]
        if unknown or not metrics:
            where = f" for interval={interval}" if interval else ""
            raise ApiError(
                400,
                f"{self.name}: unknown {', '.join(unknown) or '(none)'}{where}; choose from {', '.join(allowed)}",
            )
        return metrics


class PropertyParam(Param):
    """The breakdown's property by Tally's name, which the answer and its rows then use:
    Plausible's names (visit:source, event:page, event:goal) are taken as filters take
    them; event:props:NAME is a custom property, whose own name has no prefix to drop."""

    def __init__(self, name: str, description: str, choices: tuple):
        super().__init__(name, description, {"type": "string"}, required=True)
        self.choices = choices

    def read(self, request) -> str:
        raw = request.GET.get(self.name, "")
        if raw.startswith(PROPS) and len(raw) > len(PROPS):
            return raw
        prop = segments.unprefixed(raw)
        if prop not in self.choices:
            raise ApiError(
                400,
                f"{self.name}: must be one of {', '.join(self.choices)} (Plausible's visit: and event: prefixes too)",
            )
        return prop


class PeriodsParam(Param):
    """0 to the unit's most (`most`: {unit: periods}), the most when absent."""

    def __init__(self, name: str, description: str, most: dict[str, int]):
        super().__init__(name, description, {"type": "integer", "minimum": 0, "maximum": max(most.values())})
        self.most = most

    def read(self, request, unit: str) -> int:
        top = self.most[unit]
        return int_param(request, self.name, top, 0, top)


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
    return named_period(name, given, today)


def named_period(name: str, given: str, today: date) -> tuple[date, date]:
    """The days of a named period (`given`: the `date` parameter, "" when absent)."""
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


# The declarations: the views read these, the document (openapi.py) describes them.

SITE = SiteParam("site", "The site's domain.", {"type": "string"}, required=True)
FROM = Param(
    "from",
    f"First day, the site's local date (default: {DEFAULT_RANGE_DAYS} days before `to`); "
    f"{EARLIEST_DAY.isoformat()} at the earliest.",
    {"type": "string", "format": "date"},
)
TO = Param(
    "to",
    "Last day, inclusive (default: today in the site's time zone); tomorrow at the latest. "
    f"At most {MAX_RANGE_DAYS} days in all.",
    {"type": "string", "format": "date"},
)
PERIOD = Param(
    "period",
    "Instead of from/to, a named period as Plausible's Stats API v1 takes it: `day`, `7d`, `30d` "
    "(the days up to `date`), "
    "`month`, `6mo`, `12mo` (calendar months up to `date`'s, never past today), `custom` (with "
    "`date=FROM,TO`); Tally's "
    "`today`, `yesterday`, `90d` and `last_month` too. Not with from or to.",
    {"type": "string", "enum": [*NAMED_PERIODS, "custom"]},
)
DATE = Param(
    "date",
    "With `period`: the day it ends on or around (default today); with `period=custom`, `FROM,TO`.",
    {"type": "string"},
)
RANGE = (FROM, TO, PERIOD, DATE)
FILTERS = FiltersParam(
    "filters",
    "Only the visitors that match, e.g. `source==Google;country!=DE|FR;page~/blog`: "
    "`property==v1|v2` (one of), `!=` (none "
    "of), `~` (contains, case-insensitive), joined by `;` (all must hold; at most "
    f"{segments.MAX_FILTERS}). Properties: the visit dimensions, `page` "
    "(viewed it that day), `goal` (converted that day) and `props:<name>` (sent a custom event with "
    "that property value that day); Plausible's `visit:` and `event:` "
    "prefixes are accepted. A value "
    "holding `;`, `|` or `\\` escapes it with a backslash. "
    "Visitor numbers (visitors, DAU, WAU, MAU, new visitors, retention, converters) are counted "
    "exactly from per-day visitor "
    "bitmaps of each dimension's first values of the day (the site's `segment_values`, and its pinned goals and funnel "
    "steps); a value without its bitmap that day is estimated from HyperLogLogs, and the answer then says "
    '`"estimate": true`. Visits, pageviews, bounce rate and visit duration exist per value, not per combination: '
    "under one filter on a visit property (any values, `!=`, `~`) they are exact; under one page (`==`, `~`) or goal "
    "filter they are those of the visits that viewed the page or sent the goal's event (several pages: an upper bound, "
    "marked); else null. A filtered answer carries "
    "`filters` (as understood) and `estimate`.",
    {"type": "string"},
)
INTERVALS = ("hour", "day", "week", "month")
INTERVAL = ChoiceParam(
    "interval",
    "Row per local hour (ranges of at most 2 days; rows dated YYYY-MM-DDTHH:00; metrics visitors, an "
    "estimate, and pageviews; null in the hours still to come, and in those of a day whose hour keys have "
    "expired under the site's keep_daily_days, as the same dates last year may have, unless the day's "
    "stored row says it had no visitors and no pageviews: then 0), day, ISO week (Monday) or calendar "
    "month.",
    INTERVALS,
    "day",
)
COMPARE_SERIES = OptionalChoiceParam(
    "compare",
    "`previous_period` or `year`: add `comparison` {from, to, results}, the same series over the period of "
    "the same length just before, or over the same dates a year earlier (row n against row n).",
    COMPARISONS,
)
COMPARE_TOTALS = OptionalChoiceParam(
    "compare",
    "`previous_period`: add each metric's change in percent against the period of the same length just before "
    "(null when that period had none of it); `year`: against the same dates a year earlier. The answer "
    "says which dates in `compared`.",
    COMPARISONS,
)
MAX_LIMIT = 1000  # rows per answer
LIMIT = IntParam("limit", "Rows per page.", 10, 1, MAX_LIMIT)
PAGES = IntParam("limit", "How many pages.", 10, 1, MAX_LIMIT)
PAGE = IntParam("page", "Which page of rows, from 1.", 1, 1, 10_000)
LATITUDE = FloatParam("lat", "Latitude of the place.", -85.05, 85.05)
LONGITUDE = FloatParam("lon", "Longitude of the place.", -180.0, 180.0)
RADIUS = FloatParam("km", "Radius in kilometres.", 0.001, 20_000.0, open_low=True)
UNIT = ChoiceParam("unit", "Day cohorts or ISO-week cohorts.", ("day", "week"), "day")
RECOMMENDED = IntParam("limit", "How many pages.", 10, 1, 100)
RECOMMEND_DAYS = IntParam("days", "Rank pages by visitors over this many days.", 7, 1, 90)
SERIES_METRICS = MetricsParam(
    "metrics",
    f"Comma-separated. Per day: {', '.join((*METRICS, *VISIT_METRICS))} (default {', '.join(DEFAULT_METRICS)}); "
    f"per week or month: {', '.join((*PERIOD_METRICS, *VISIT_METRICS))}; per hour: {', '.join(HOUR_METRICS)}. "
    "The visit metrics are those of the visits that started in the row's days (bounce_rate in percent, "
    "visit_duration in seconds); with filters, a single value's own (else null).",
    choices={
        "hour": HOUR_METRICS,
        "day": (*METRICS, *VISIT_METRICS),
        "week": (*PERIOD_METRICS, *VISIT_METRICS),
        "month": (*PERIOD_METRICS, *VISIT_METRICS),
    },
    defaults={"hour": HOUR_METRICS, "day": DEFAULT_METRICS, "week": PERIOD_METRICS, "month": PERIOD_METRICS},
)
TOTALS_METRICS = MetricsParam(
    "metrics",
    f"Comma-separated, from {', '.join(AGGREGATE_METRICS)} (default all).",
    choices={"": AGGREGATE_METRICS},
    defaults={"": AGGREGATE_METRICS},
)
ROW_METRICS = NamesParam(
    "metrics",
    "Comma-separated, the row's metrics to return (default all): visit dimensions have visitors, visits, "
    "pageviews, bounce_rate, visit_duration, views_per_visit; exit_page visits; page visitors, pageviews; "
    "goal visitors, events, conversion_rate, revenue; custom properties visitors, events.",
)
PROPERTY = PropertyParam(
    "property",
    f"The dimension: one of {', '.join(dimensions.ALL)}, page, goal (rows: goal, visitors = converters, events, "
    "conversion_rate in percent, revenue per currency), or event:props:NAME (a custom property's values: "
    "visitors, events; with `event` to keep one event's). Plausible's names are accepted too, as in "
    "`filters`: their `visit:` or `event:` prefix is dropped (`visit:source`, `visit:utm_campaign`, "
    "`event:page`, `event:goal`); the answer's `property` and its rows' key are then Tally's (`source`).",
    (*dimensions.ALL, "page", "goal", f"{PROPS}<name>"),
)
EVENT = TextParam("event", "With property=event:props:NAME: only this custom event's properties.")
SEARCH = TextParam(
    "search",
    "Only values containing this text (case-insensitive), for every property (pages' paths, goals' "
    "names, custom properties' values); kept before paging, so `total` counts them. At most 200 characters "
    "are used.",
    longest=200,
)
FUNNEL = TextParam("funnel", "The funnel's name.", required=True)
PERIODS = PeriodsParam(
    "periods",
    f"Largest n in retained (at most {DAY_PERIODS} days or {WEEK_PERIODS} weeks; default the most).",
    {"day": DAY_PERIODS, "week": WEEK_PERIODS},
)
USER = IdParam("user", "The site's user id.", 256)
ASYNC = FlagParam("async", "1 to run as a job whatever the length.", "1")
BOTS = FlagParam("bots", "`keep` to count bot traffic (dropped by default).", "keep")

# Path and header parameters: Django hands them over; declared for the document.
FORMAT = Param(
    "fmt",
    "csv: a zip of one CSV per table (NAME.csv); xlsx: a sheet per table; json: {site, from, to, tables: "
    "{NAME: {columns, rows, note (only where one is due)}}}.",
    {"type": "string", "enum": list(tables.FORMATS)},
    required=True,
    where="path",
)
JOB = Param("job", "The export job's id (the 202 answer's `job`).", {"type": "string"}, required=True, where="path")
IDEMPOTENCY_KEY = Param(
    "Idempotency-Key",
    "Up to 255 visible ASCII characters (a UUID, say; other bytes are refused, 400): the same key "
    "within 24 hours counts the batch once (a retry answers `Idempotent-Replayed: true`); the same key with "
    "another body is refused (422).",
    {"type": "string", "maxLength": 255},
    where="header",
)
