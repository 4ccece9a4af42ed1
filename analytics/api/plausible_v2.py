"""Plausible's Stats API v2: `POST /api/v2/query`, so a script written for Plausible reads
Tally by changing its base URL and key.

The body (site_id, metrics, date_range, dimensions, filters, order_by, pagination, include)
is validated by `QueryBody`, then translated into one Query for the runner
(analytics.queries.runner), the one every other reader uses: the same question gets the
same numbers as /api/v1/stats/*. No dimension is an aggregate, a time dimension a
timeseries, any other a breakdown. What Tally cannot answer (two dimensions at once, `or`
and `not` filters, a metric a kind of row does not have...) is a 400 saying so, never a
silent approximation. Plausible's own parser (lib/plausible/stats/query_parser.ex) is the
reference for names, defaults and messages; its answer shape is query_result.ex's.
"""

from datetime import date, datetime, time, timedelta
from typing import Any, Literal

import orjson
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import dimensions, queries
from ..capture import inbox
from ..countries import COUNTRIES
from ..periods import EARLIEST_DAY, days_between, month_start, out_of_bounds, period_start
from ..queries import segments
from ..sites import SiteInfo
from ..store.connection import get_redis
from .http import ApiError, bearer_site, json_errors, json_response, methods, read_body
from .params import MAX_RANGE_DAYS, PROPS

MAX_BODY = 64 * 1024
MAX_ROWS = 10_000  # Plausible's default (and our largest) page of rows; also the most rows a query may reorder
METRICS = ("visitors", "visits", "pageviews", "views_per_visit", "bounce_rate", "visit_duration", "events")
EXTRA_METRICS = ("percentage", "conversion_rate")  # computed here from the runner's visitors
VISIT_ROW = ("visitors", "visits", "pageviews", "bounce_rate", "visit_duration", "views_per_visit")
TIME = {"time:hour": "hour", "time:day": "day", "time:week": "week", "time:month": "month"}
MAX_PERIODS = 100  # periods of a time dimension asked with another (a breakdown each)
PERIODS = ("day", "7d", "28d", "30d", "91d", "month", "6mo", "12mo", "year", "all")
OPERATORS = {"is": "==", "is_not": "!=", "contains": "~", "contains_not": "!~"}
UNSUPPORTED_OPERATORS = ("matches", "matches_not", "matches_wildcard", "matches_wildcard_not")


class QueryPaging(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=MAX_ROWS, ge=1, le=MAX_ROWS)
    offset: int = Field(default=0, ge=0, le=MAX_ROWS)


class QueryInclude(BaseModel):
    model_config = ConfigDict(extra="forbid")

    total_rows: bool = Field(default=False, description="Add `meta.total_rows`: the rows before pagination.")
    time_labels: bool = Field(
        default=False, description="With a time dimension: add `meta.time_labels`, every period of the range."
    )
    imports: bool = Field(
        default=False,
        description=(
            "Count the days imported from Plausible's CSV export (daily totals: their visitors over several "
            "days are summed). Off, they are left out (cut at the range's ends); `meta.imports_included` says "
            "whether any were counted."
        ),
    )


class QueryBody(BaseModel):
    """The request body, as Plausible's JSON schema (priv/json-schemas/query-api-schema.json) has it."""

    model_config = ConfigDict(extra="forbid")

    site_id: str = Field(description="The site's domain: the API key's site.")
    metrics: list[str] = Field(
        min_length=1,
        max_length=len(METRICS) + len(EXTRA_METRICS),
        json_schema_extra={"items": {"type": "string", "enum": [*METRICS, *EXTRA_METRICS]}},
        description="Which metrics each kind of row has: see the path's description.",
    )
    date_range: str | list[str] = Field(
        description=f"One of {', '.join(PERIODS)}, or two ISO dates [first, last] (the site's local days). "
        "`Nd` is the N days before `date` (today by default); `Nmo` the N calendar months before its month; "
        f"`all` since the site's first counted day (or its creation). At most {MAX_RANGE_DAYS} days "
        f"(`all`: the last {MAX_RANGE_DAYS})."
    )
    date: str | None = Field(default=None, description="The day taken as today for date_range (ISO date).")
    dimensions: list[str] = Field(
        default_factory=list,
        max_length=8,  # (one is answered: _dimension() says so, in words, past it)
        description="None (totals), a time dimension, or one of event:page, event:goal, event:props:<name>, "
        f"visit:{', visit:'.join(dimensions.ALL)}.",
    )
    filters: list[Any] = Field(
        default_factory=list,
        max_length=segments.MAX_FILTERS * 4,
        description='[operator, dimension, [values]] with is, is_not or contains; ["and", [...]] too. '
        f"At most {segments.MAX_FILTERS} filters.",
    )
    order_by: list[tuple[str, Literal["asc", "desc"]]] | None = Field(default=None, max_length=10)
    pagination: QueryPaging = Field(default_factory=QueryPaging)
    include: QueryInclude = Field(default_factory=QueryInclude)


@csrf_exempt
@methods("POST")
@json_errors
def query(request):
    site = bearer_site(request)
    body = _body(request)
    if body.site_id.strip().lower() != site.domain:
        raise ApiError(404, f"site_id: no site {body.site_id[:200]!r} for this API key")
    inbox.flush(get_redis(), site)  # (the single events acknowledged before this read are in its numbers)
    asked = _parse(site, body)
    return json_response(_answer(site, body, asked))


def _body(request) -> QueryBody:
    raw = read_body(request, MAX_BODY)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise ApiError(400, f"body: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ApiError(400, "body: expected a JSON object")
    try:
        return QueryBody.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise ApiError(400, f"{where}: {first['msg']}") from None


class _Asked:
    """A validated body in Tally's terms."""

    def __init__(self, start: date, end: date, kind: str, dimension: str, interval: str, filters: tuple):
        self.start, self.end, self.kind = start, end, kind
        self.dimension, self.interval, self.filters = dimension, interval, filters
        self.metrics: list[str] = []
        self.order_by: list[tuple[str, str]] = []
        self.rows = MAX_ROWS  # breakdown: the rows to ask the runner for (all of them, unless its order is wanted)
        self.shown = (start, end)  # the range asked for; start..end is what is counted (imported days cut off)
        self.empty = False  # every day of the range is imported, and imports are not asked for
        self.imports_inside = False  # imported days inside the range, which cannot be cut off
        self.named = ""  # a *_name dimension (NAMED): its rows show names
        self.time_first = True  # time_breakdown: the time dimension comes first in the rows


def _parse(site: SiteInfo, body: QueryBody) -> _Asked:
    start, end = date_range(site, body.date_range, body.date)
    kind, dimension, interval = _dimension(body.dimensions, start, end)
    asked = _Asked(start, end, kind, dimension, interval, _filters(body.filters))
    asked.named = next((name for name in body.dimensions if name in NAMED), "")
    asked.time_first = bool(body.dimensions) and (body.dimensions[0] == "time" or body.dimensions[0] in TIME)
    asked.metrics = _metrics(body.metrics, asked, body.dimensions)
    asked.order_by = _order_by(body, asked)
    own = [("visitors", "desc")]  # (the runner's own order: the page asked for is among its first rows)
    if kind == "time_breakdown":  # (the runner's own order in each period, periods in order)
        own = [(next(name for name in body.dimensions if name == "time" or name in TIME), "asc"), *own]
    if asked.order_by == own:
        asked.rows = body.pagination.offset + body.pagination.limit
    if asked.interval == "hour" and asked.filters:
        raise ApiError(400, "filters: not available with time:hour (filters count visitors by day)")
    if body.include.time_labels and kind not in ("timeseries", "time_breakdown"):
        raise ApiError(400, "Invalid include.time_labels: requires a time dimension.")
    if not body.include.imports:
        kept, asked.imports_inside = queries.without_imports(site.id, start, end)
        if kept is None:
            asked.empty = True
        else:
            asked.start, asked.end = kept
    return asked


def date_range(site: SiteInfo, value: str | list[str], anchor: str | None) -> tuple[date, date]:
    """The local days a date_range names, as Plausible's parser reads it (its current version:
    `7d` and the like end yesterday, `6mo` and the like end with last month)."""
    today = site.today()
    if anchor is not None:
        today = _iso_day(anchor, "date", site.today())
    if isinstance(value, list):
        if len(value) != 2:
            raise ApiError(400, f"Invalid date_range {value!r:.200}: expected two ISO dates")
        start, end = (_iso_day(v, "date_range", site.today()) for v in value)
    else:
        start, end = _named(site, value, today)
    if start > end:
        raise ApiError(400, "date_range: the first date must not be after the last")
    if (end - start).days + 1 > MAX_RANGE_DAYS:
        if value != "all":
            raise ApiError(400, f"date_range: at most {MAX_RANGE_DAYS} days")
        start = end - timedelta(days=MAX_RANGE_DAYS - 1)
    return start, end


def _named(site: SiteInfo, name: str, today: date) -> tuple[date, date]:
    if name == "day":
        return today, today
    if name == "month":
        return month_start(today), _month_end(today)
    if name == "year":
        return today.replace(month=1, day=1), today.replace(month=12, day=31)
    if name == "all":
        # (since the site's first day with numbers, or its creation: imported history is older than the site)
        return max(min(queries.first_counted_day(site), today), EARLIEST_DAY), today
    if name.endswith("d") and name[:-1].isdigit() and 0 < int(name[:-1]) <= 5000:
        return today - timedelta(days=int(name[:-1])), today - timedelta(days=1)
    if name.endswith("mo") and name[:-2].isdigit() and 0 < int(name[:-2]) <= 100:
        first = month_start(today)
        for _ in range(int(name[:-2])):
            first = month_start(first - timedelta(days=1))
        return first, month_start(today) - timedelta(days=1)
    if name in ("realtime", "30m"):
        raise ApiError(400, f"Invalid date_range {name!r}: Tally answers whole days (see /api/v1/stats/realtime)")
    raise ApiError(400, f"Invalid date_range {name[:200]!r}; use one of {', '.join(PERIODS)} or two ISO dates")


def _month_end(day: date) -> date:
    return (month_start(day) + timedelta(days=31)).replace(day=1) - timedelta(days=1)


def _iso_day(value: str, name: str, today: date) -> date:
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise ApiError(
            400, f"Invalid {name} {value[:200]!r}: expected an ISO date YYYY-MM-DD (Tally counts whole days)"
        ) from None
    problem = out_of_bounds(day, today)
    if problem:
        raise ApiError(400, f"{name}: {value} {problem}")
    return day


def _dimension(given: list[str], start: date, end: date) -> tuple[str, str, str]:
    """(kind, Tally's dimension, interval) for the body's dimensions."""
    if not given:
        return "aggregate", "", "day"
    if len(given) > 1:
        times = [name for name in given if name == "time" or name in TIME]
        if len(given) > 2 or len(times) != 1:
            raise ApiError(
                400,
                f"dimensions: Tally answers one dimension, or a time dimension and one other, not "
                f"{', '.join(given)[:200]}",
            )
        _, _, interval = _dimension(times, start, end)
        _, dimension, _ = _dimension([name for name in given if name not in times], start, end)
        if interval == "hour":
            raise ApiError(400, "dimensions: time:hour with another dimension: ask by day (time:day)")
        if len(time_labels(interval, start, end)) > MAX_PERIODS:
            raise ApiError(400, f"dimensions: at most {MAX_PERIODS} periods with another dimension: a longer interval")
        return "time_breakdown", dimension, interval
    name = given[0]
    if name == "time":  # (Plausible picks the interval by the range's length)
        days = (end - start).days + 1
        name = "time:hour" if days == 1 else "time:day" if days <= 40 else "time:month"
    if name in TIME:
        if TIME[name] == "hour" and (end - start).days + 1 > queries.MAX_HOUR_DAYS:
            raise ApiError(400, f"dimensions: time:hour covers at most {queries.MAX_HOUR_DAYS} days")
        return "timeseries", "", TIME[name]
    return "breakdown", _tally_dimension(name, "dimensions"), "day"


# Plausible's *_name dimensions: the dimension Tally keeps, and the name a value shows as.
# (Regions are kept by ISO 3166-2 code: Tally has no table of their names.)
NAMED = {
    "visit:country_name": ("country", lambda code: COUNTRIES.get(code, (None, code))[1]),
    "visit:city_name": ("city", lambda city: city.rpartition(", ")[0] or city),  # ("Springfield, US-IL")
}
COUNTRY_CODES = {name.lower(): code for code, (_, name) in COUNTRIES.items()}


def _tally_dimension(name: str, where: str) -> str:
    """A Plausible dimension by Tally's name, or a 400 naming it."""
    if name in NAMED:
        return NAMED[name][0]
    if name.startswith(PROPS) and len(name) > len(PROPS):
        return name
    if name == "event:page":
        return "page"
    if name == "event:goal":
        return "goal"
    if name in ("event:hostname", "visit:entry_page_hostname"):
        return dimensions.HOSTNAME  # (the host a visit landed on: its entry page's)
    if name.startswith("visit:") and name[len("visit:") :] in dimensions.ALL:
        return name[len("visit:") :]
    raise ApiError(
        400,
        f"Invalid {where} {name[:200]!r}: Tally has event:page, event:goal, event:props:<name>, event:hostname, "
        f"time, time:hour, time:day, time:week, time:month and visit:{', visit:'.join(dimensions.ALL)}",
    )


def _filters(given: list) -> tuple:
    """Plausible's filters as Tally's Filters, through segments.parse so that every rule of
    Tally's filters applies. Tally's filters are all joined by and, each one property and
    one test (is, is not, contains, does not contain) over several values; Plausible's
    nested forms become that where they say the same: `and` inside `and`; `or` of `is` (or
    of `contains`) on one dimension, which is one filter of their values; `not`, which turns
    the test over; `has_done` / `has_not_done` of a goal or page, a visitor who did it (or
    not) on the day. Anything else is a 400 naming it."""
    parts = []
    for f in _joined(given):
        prop, op, values = _clause(f)
        parts.append(f"{prop}{op}{'|'.join(segments.escape(v) for v in values)}")
    try:
        return segments.parse(";".join(parts))
    except ValueError as e:
        raise ApiError(400, f"Invalid filters: {e}") from None


NEGATED = {"==": "!=", "!=": "==", "~": "!~", "!~": "~"}


def _joined(given: list, joiner: str = "and") -> list:
    """The filters a `joiner` ("and", "or") joins, the nested ones of the same joiner opened."""
    found: list = []
    for f in given:
        if isinstance(f, list) and len(f) == 2 and f[0] == joiner and isinstance(f[1], list):
            found.extend(_joined(f[1], joiner))
        else:
            found.append(f)
    return found


def _clause(f) -> tuple[str, str, list[str]]:
    """One filter as (Tally's property, its test, its values), or a 400 naming it."""
    if isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) and f[0] in ("not", "has_done", "has_not_done"):
        inner = f[1]
        if isinstance(inner, list) and len(inner) == 2 and inner[0] == "and" and isinstance(inner[1], list):
            if len(inner[1]) != 1:
                raise ApiError(400, f"Invalid filter {_show(f)}: Tally cannot turn over several filters at once")
            inner = inner[1][0]
        prop, op, values = _clause(inner)
        if f[0] != "not" and prop not in ("goal", "page"):
            raise ApiError(400, f"Invalid filter {_show(f)}: {f[0]} takes an event:goal or event:page filter")
        if f[0] == "has_done":
            return prop, op, values
        return prop, NEGATED[op], values
    if isinstance(f, list) and len(f) == 2 and f[0] == "or" and isinstance(f[1], list) and f[1]:
        clauses = [_clause(inner) for inner in _joined(f[1], "or")]
        props, ops = {c[0] for c in clauses}, {c[1] for c in clauses}
        if len(props) != 1 or len(ops) != 1 or next(iter(ops)) not in ("==", "~"):
            raise ApiError(
                400,
                f"Invalid filter {_show(f)}: Tally's or joins is (or contains) filters on one dimension; "
                "filters on different dimensions are all joined by and",
            )
        return clauses[0][0], clauses[0][1], [v for c in clauses for v in c[2]]
    if not isinstance(f, list) or len(f) < 3 or not isinstance(f[0], str) or not isinstance(f[1], str):
        if isinstance(f, list) and f and f[0] in ("or", "not", "and", "has_done", "has_not_done"):
            raise ApiError(400, f"Invalid filter {_show(f)}: expected [{f[0]}, [filters]]")
        raise ApiError(400, f"Invalid filter {_show(f)}: expected [operator, dimension, [values]]")
    operator, name, values = f[0], f[1], f[2]
    if operator in UNSUPPORTED_OPERATORS:
        raise ApiError(400, f"Invalid filter {_show(f)}: Tally's filters have is, is_not, contains and contains_not")
    if operator not in OPERATORS:
        raise ApiError(400, f"Unknown operator for filter {_show(f)}.")
    if len(f) > 3:
        raise ApiError(400, f"Invalid filter {_show(f)}: Tally takes no filter modifiers")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ApiError(400, f"Invalid filter {_show(f)}: the values must be a list of strings")
    if name == "visit:city_name":
        raise ApiError(400, f'Invalid filter {_show(f)}: filter cities by visit:city ("Springfield, US-IL")')
    prop = _tally_dimension(name, "filter dimension")
    if prop.startswith(PROPS):  # (event:props:<name> is Tally's props:<name>)
        prop = segments.CUSTOM + prop[len(PROPS) :]
    elif prop not in segments.PROPERTIES:
        raise ApiError(400, f"Invalid filter {_show(f)}: Tally cannot filter by {name}")
    if name == "visit:country_name":
        if operator not in ("is", "is_not"):
            raise ApiError(400, f"Invalid filter {_show(f)}: visit:country_name takes is or is_not")
        unknown = [v for v in values if v.lower() not in COUNTRY_CODES]
        if unknown:
            raise ApiError(400, f"Invalid filter {_show(f)}: no country named {unknown[0][:100]!r}")
        values = [COUNTRY_CODES[v.lower()] for v in values]
    return prop, OPERATORS[operator], values


def _show(value) -> str:
    return orjson.dumps(value).decode()[:200]


def _available(asked: _Asked) -> tuple[str, ...]:
    """The metrics a query's kind of answer has."""
    d = asked.dimension
    if asked.kind == "aggregate":
        return VISIT_ROW + (("conversion_rate",) if any(f.prop == "goal" for f in asked.filters) else ())
    if asked.kind == "timeseries":
        return queries.HOUR_METRICS if asked.interval == "hour" else VISIT_ROW
    if asked.filters:  # (a filtered audience's rows have visitors only; goals: and conversion rates)
        if d.startswith(PROPS) or d == dimensions.EXIT:
            return ()
        return ("visitors", "conversion_rate") if d == "goal" else ("visitors", "percentage")
    if d == dimensions.EXIT:
        return ("visits",)
    if d == "page":
        return ("visitors", "pageviews", "percentage")
    if d == "goal":
        return ("visitors", "events", "conversion_rate")
    if d.startswith(PROPS):
        return ("visitors", "events", "percentage")
    return (*VISIT_ROW, "percentage")


def _metrics(given: list[str], asked: _Asked, names: list[str]) -> list[str]:
    for metric in given:
        if metric not in METRICS + EXTRA_METRICS:
            raise ApiError(400, f"Unknown metric '{metric[:100]}'.")
    if len(set(given)) != len(given):
        raise ApiError(400, "metrics: a metric is listed twice")
    if asked.kind in ("breakdown", "time_breakdown") and asked.filters and not _available(asked):
        raise ApiError(
            400, f"filters: not available with dimension {names[0]} (its rows count events or visits, not visitors)"
        )
    available = _available(asked)
    for metric in given:
        if metric not in available:
            if metric == "conversion_rate":
                raise ApiError(
                    400, "Metric `conversion_rate` can only be queried with event:goal filters or dimensions."
                )
            if metric == "percentage" and asked.kind not in ("breakdown", "time_breakdown"):
                raise ApiError(400, "Metric `percentage` requires a dimension other than time.")
            shape = f"dimension {names[0]}" if names else "no dimension"
            if asked.filters and asked.kind in ("breakdown", "time_breakdown"):
                shape += " under filters"
            raise ApiError(
                400, f"Metric `{metric}` is not available with {shape} in Tally; choose from {', '.join(available)}."
            )
    return given


def _order_by(body: QueryBody, asked: _Asked) -> list[tuple[str, str]]:
    if body.order_by is None:  # Plausible's default: time first, else the first metric, most first
        if asked.kind == "timeseries":
            return [(body.dimensions[0], "asc")]
        if asked.kind == "time_breakdown":
            time_name = next(name for name in body.dimensions if name == "time" or name in TIME)
            return [(time_name, "asc"), (body.metrics[0], "desc")]
        return [(body.metrics[0], "desc")]
    for value, direction in body.order_by:
        if value not in body.metrics and value not in body.dimensions:
            raise ApiError(
                400,
                f"Invalid order_by entry {_show([value, direction])}. Entry is not a queried metric or dimension.",
            )
    return [(value, direction) for value, direction in body.order_by]


def _answer(site: SiteInfo, body: QueryBody, asked: _Asked) -> dict:
    r = get_redis()
    run = {
        "aggregate": _aggregate,
        "timeseries": _timeseries,
        "breakdown": _breakdown,
        "time_breakdown": _time_breakdown,
    }[asked.kind]
    rows, meta, labels = _nothing(asked) if asked.empty else run(r, site, asked)
    if asked.kind == "time_breakdown" or (
        asked.kind == "timeseries" and (asked.empty or (asked.start, asked.end) != asked.shown)
    ):
        labels = time_labels(asked.interval, *asked.shown)
    if body.include.imports:
        meta["imports_included"] = bool(queries.imported_days(site.id, *asked.shown))
    elif asked.imports_inside:
        meta["imports_warning"] = (
            "Imported days between days Tally counted could not be left out of this range: they are counted."
        )
    rows = _ordered(rows, body, asked)
    total = len(rows)
    offset, limit = body.pagination.offset, body.pagination.limit
    meta = {**meta, **({"time_labels": labels} if body.include.time_labels else {})}
    if body.include.total_rows:
        meta["total_rows"] = meta.pop("total", total)
    meta.pop("total", None)
    return {
        "results": rows[offset : offset + limit],
        "meta": dict(sorted(meta.items())),
        "query": {
            "site_id": site.domain,
            "metrics": asked.metrics,
            "date_range": [_at(site, asked.shown[0], time(0, 0, 0)), _at(site, asked.shown[1], time(23, 59, 59))],
            "filters": body.filters,
            "dimensions": body.dimensions,
            "order_by": [list(entry) for entry in asked.order_by],
            "include": {name: True for name, on in body.include.model_dump().items() if on},
            "pagination": {"limit": limit, "offset": offset},
        },
    }


def _at(site: SiteInfo, day: date, moment: time) -> str:
    """A local moment as Plausible's answer writes it (Elixir's ISO 8601: `Z` for UTC)."""
    text = datetime.combine(day, moment, tzinfo=site.tz).isoformat()
    return text.removesuffix("+00:00") + "Z" if str(site.tz) in ("UTC", "Etc/UTC") else text


def _marks(result: queries.Result, rows: list[dict] | None = None) -> dict:
    """Tally's own marks: whether any number is an estimate, and why (by metric)."""
    estimates = dict(result.meta.get("estimates") or {})
    return {"estimate": result.estimate or any(row.get("estimate") for row in rows or []), "estimates": estimates}


def _aggregate(r, site: SiteInfo, asked: _Asked):
    own = [m for m in asked.metrics if m in VISIT_ROW]
    if "conversion_rate" in asked.metrics and "visitors" not in own:
        own.append("visitors")
    result = queries.run(
        r, queries.Query(site, asked.start, asked.end, "aggregate", tuple(own or ("visitors",)), asked.filters)
    )
    values = {m: total["value"] for m, total in result.totals.items()}
    if "conversion_rate" in asked.metrics:
        values["conversion_rate"] = goal_conversion_rate(
            r, site, asked.start, asked.end, asked.filters, values["visitors"]
        )
    return [{"metrics": [values[m] for m in asked.metrics], "dimensions": []}], _marks(result), []


def _timeseries(r, site: SiteInfo, asked: _Asked):
    result = queries.run(
        r,
        queries.Query(
            site, asked.start, asked.end, "timeseries", tuple(asked.metrics), asked.filters, interval=asked.interval
        ),
    )
    labels = [_time_label(row["date"]) for row in result.rows]
    rows = [  # (Plausible leaves out the periods without data; time_labels lists them all)
        {"metrics": [row.get(m) for m in asked.metrics], "dimensions": [label]}
        for row, label in zip(result.rows, labels)
        if any(row.get(m) for m in asked.metrics)
    ]
    return rows, _marks(result, result.rows), labels


def _nothing(asked: _Asked):
    """The answer over no days: every day of the range is imported, and imports were not asked for."""
    if asked.kind != "aggregate":
        return [], {"estimate": False, "estimates": {}, "total": 0}, []
    values = [0 if m in ("visitors", "visits", "pageviews", "events") else None for m in asked.metrics]
    return [{"metrics": values, "dimensions": []}], {"estimate": False, "estimates": {}}, []


def time_labels(interval: str, start: date, end: date) -> list[str]:
    """Every period of start..end as a time dimension names it (the runner's row dates)."""
    days = days_between(start, end)
    if interval == "hour":
        return [f"{day.isoformat()} {hour:02d}:00:00" for day in days for hour in range(24)]
    if interval == "day":
        return [day.isoformat() for day in days]
    return sorted({period_start(interval, day).isoformat() for day in days})


def _time_label(value: str) -> str:
    return value.replace("T", " ") + ":00" if "T" in value else value


def _time_breakdown(r, site: SiteInfo, asked: _Asked):
    """A time dimension and another: the other's breakdown in each period of the range
    (each a breakdown over the period's days: visitors a union over them)."""
    groups: dict[date, list[date]] = {}
    for day in days_between(asked.start, asked.end):
        groups.setdefault(day if asked.interval == "day" else period_start(asked.interval, day), []).append(day)
    rows: list[dict] = []
    marks: dict = {"estimate": False, "estimates": {}, "total": 0}
    for first, days in groups.items():
        found, meta, _ = _breakdown(r, site, asked, days[0], days[-1])
        label = first.isoformat()
        for row in found:
            row["dimensions"] = [label, *row["dimensions"]] if asked.time_first else [*row["dimensions"], label]
        rows.extend(found)
        marks["estimate"] = marks["estimate"] or meta["estimate"]
        marks["estimates"].update(meta["estimates"])
        marks["total"] += meta["total"]
    return rows, marks, []


def _breakdown(r, site: SiteInfo, asked: _Asked, start: date | None = None, end: date | None = None):
    start, end = start or asked.start, end or asked.end
    result = queries.run(
        r,
        queries.Query(
            site,
            start,
            end,
            "breakdown",
            filters=asked.filters,
            dimension=asked.dimension,
            limit=asked.rows,
        ),
    )
    key = asked.dimension.removeprefix(PROPS)
    shown = NAMED[asked.named][1] if asked.named else str
    total_visitors = None
    if "percentage" in asked.metrics:
        everyone = queries.run(r, queries.Query(site, start, end, "aggregate", ("visitors",), asked.filters))
        total_visitors = everyone.totals["visitors"]["value"]
    rows = []
    for row in result.rows:
        values = {**row, "percentage": _percent(row.get("visitors"), total_visitors)}
        rows.append({"metrics": [values.get(m) for m in asked.metrics], "dimensions": [shown(str(row[key]))]})
    return rows, {**_marks(result, result.rows), "total": result.meta.get("total", len(rows))}, []


def goal_conversion_rate(r, site: SiteInfo, start: date, end: date, filters: tuple, converted) -> float | None:
    """Plausible's conversion_rate of totals under an event:goal filter: the goal's visitors
    (`converted`, counted under all the filters) in percent of the same filters' audience
    without the goal (v1's aggregate answers it the same way)."""
    audience = tuple(f for f in filters if f.prop != "goal")
    everyone = queries.run(r, queries.Query(site, start, end, "aggregate", ("visitors",), audience))
    return _percent(converted, everyone.totals["visitors"]["value"])


def _percent(part, whole) -> float | None:
    if part is None or not whole:
        return None if part is None else 0.0
    return round(100 * part / whole, 2)


def _ordered(rows: list[dict], body: QueryBody, asked: _Asked) -> list[dict]:
    """The rows in order_by's order (a stable sort per key, the last key first), nulls last."""
    columns = {name: ("metrics", n) for n, name in enumerate(asked.metrics)}
    columns.update({name: ("dimensions", n) for n, name in enumerate(body.dimensions)})
    for value, direction in reversed(asked.order_by):
        part, n = columns[value]
        present = [row for row in rows if row[part][n] is not None]
        missing = [row for row in rows if row[part][n] is None]
        rows = sorted(present, key=lambda row: row[part][n], reverse=direction == "desc") + missing
    return rows
