"""The API's JSON answers, one pydantic model per body. The OpenAPI document takes its
response schemas from these (openapi.py), and tests/test_api_answers.py validates real
answers against them with extra keys forbidden: a key an answer gains fails until it is
described here, so the document cannot drift from what the views send. The views build
their dicts themselves; nothing here runs on a request.

A key an answer has only sometimes is `sometimes()`: it may be absent, but is null only
where its type says so (the document leaves it out of `required`).
"""

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .params import PROPS


def sometimes(description: str | None = None) -> Any:
    """A key present in some answers only."""
    return Field(default=None, description=description)


FILTERS = "With `filters`: the filters as applied, `;`-separated (duplicates kept once, Plausible's prefixes dropped)."
ESTIMATE = (
    "With `filters`: true when a number in the answer is an estimate (a value had no visitor bitmap on a day of "
    "the range, so HyperLogLogs answer for it)."
)
ROW_ESTIMATE = "Present (true) on a row whose visitors are an estimate."


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Error(Body):
    """Every error's body; the message names the parameter or field at fault."""

    error: str


class Span(Body):
    """A run of days, both included."""

    from_: date = Field(alias="from")
    to: date


class SeriesRow(Body):
    """A row of a timeseries: its date and the metrics asked for. A number is null where it
    has no value: hours still to come, or whose hour keys have expired on a day that had
    visitors; a visit metric under several filters."""

    date: str = Field(description="YYYY-MM-DD (the week's Monday, the month's first day) or YYYY-MM-DDTHH:00.")
    visitors: int | None = sometimes()
    pageviews: int | None = sometimes()
    dau: int | None = sometimes()
    new_visitors: int | None = sometimes()
    wau: int | None = sometimes()
    mau: int | None = sometimes()
    stickiness: float | None = sometimes("DAU / MAU, in percent.")
    visits: int | None = sometimes()
    bounce_rate: float | None = sometimes("Percent.")
    visit_duration: float | None = sometimes("Seconds.")
    views_per_visit: float | None = sometimes()
    estimate: str = sometimes("Under `filters`: why the row's numbers are an estimate, where they are.")


class Comparison(Body):
    """The same rows over the period compared with."""

    from_: date = Field(alias="from")
    to: date
    results: list[SeriesRow]


class TimeseriesAnswer(Body):
    """`GET /api/v1/stats/timeseries`."""

    site: str
    from_: date = Field(alias="from")
    to: date
    interval: Literal["hour", "day", "week", "month"]
    filters: str = sometimes(FILTERS)
    estimate: bool = sometimes(ESTIMATE)
    comparison: Comparison = sometimes("With `compare`.")
    results: list[SeriesRow]


class Total(Body):
    """A metric's number over the period."""

    value: float | None
    change: float | None = sometimes(
        "With `compare`: in percent; null when the period compared with had none of it, or (today against "
        "yesterday) the metric is not comparable."
    )
    estimate: str = sometimes(
        "Why the value is an estimate, where it is (days whose raw keys have expired; a filter's value without "
        "its visitor bitmap)."
    )


class Totals(Body):
    """The metrics asked for (default all)."""

    visitors: Total = sometimes()
    pageviews: Total = sometimes()
    dau: Total = sometimes()
    wau: Total = sometimes()
    mau: Total = sometimes()
    stickiness: Total = sometimes()
    new_visitors: Total = sometimes()
    visits: Total = sometimes()
    bounce_rate: Total = sometimes()
    visit_duration: Total = sometimes()
    views_per_visit: Total = sometimes()


class AggregateAnswer(Body):
    """`GET /api/v1/stats/aggregate`."""

    site: str
    from_: date = Field(alias="from")
    to: date
    filters: str = sometimes(FILTERS)
    estimate: bool = sometimes(ESTIMATE)
    compared: Span = sometimes("With `compare`: the dates compared with.")
    results: Totals


class BreakdownRow(BaseModel):
    """A row: the property's value under the property's name (`source`, `page`, `goal`, a
    custom property's own name) and the metrics asked for; a metric the row's kind does not
    have is null."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, str] = Field(init=False)  # (the property's value, under its name)

    visitors: int | None = sometimes()
    visits: int | None = sometimes()
    pageviews: int | None = sometimes()
    bounce_rate: float | None = sometimes("Percent.")
    visit_duration: float | None = sometimes("Seconds.")
    views_per_visit: float | None = sometimes()
    events: int | None = sometimes("Goals and custom properties (null for goals under filters).")
    conversion_rate: float | None = sometimes("Goals: percent of the audience's visitors.")
    revenue: dict[str, float] | None = sometimes("Goals with revenue: {currency: amount}.")
    estimate: Literal[True] = sometimes(ROW_ESTIMATE)


class BreakdownAnswer(Body):
    """`GET /api/v1/stats/breakdown`."""

    site: str
    from_: date = Field(alias="from")
    to: date
    property: str
    page: int
    filters: str = sometimes(FILTERS)
    estimate: bool = sometimes(ESTIMATE)
    results: list[BreakdownRow]
    total: int = Field(description="How many rows there are in all (those `search` kept).")

    @model_validator(mode="after")
    def _rows_name_their_property(self):
        """Each row's one key besides its metrics is the property's name."""
        name = self.property.removeprefix(PROPS)
        for row in self.results:
            if set(row.model_extra or {}) != {name}:
                raise ValueError(
                    f"a row's keys other than metrics must be {name!r} alone: {sorted(row.model_extra or {})}"
                )
        return self


class FunnelStep(Body):
    step: str
    visitors: int
    conversion_rate: float = Field(description="Percent of the first step's visitors.")
    dropoff: int = Field(description="The visitors lost since the step before.")


class FunnelAnswer(Body):
    """`GET /api/v1/stats/funnel`."""

    site: str
    from_: date = Field(alias="from")
    to: date
    funnel: str
    filters: str = Field(description='The filters as applied, `;`-separated ("" for none).')
    estimate: bool = Field(description="True when a step's value had no visitor bitmap on a day of the range.")
    steps: list[FunnelStep]


class City(Body):
    city: str
    km: float
    visitors: int


class NearAnswer(Body):
    """`GET /api/v1/stats/near`."""

    site: str
    from_: date = Field(alias="from")
    to: date
    lat: float
    lon: float
    km: float
    visitors: int
    cities: list[City]
    counted: list[Span] = Field(
        description="The days the numbers count (runs of consecutive days): the whole range unless some days' "
        "locations have expired."
    )
    expired: list[Span] = Field(
        description="The days left out: they had cities, whose locations are no longer kept (expired with the "
        "day's raw keys); usually empty."
    )
    message: str = sometimes("With days in `expired`: which days were counted, which were not, and why.")


class PageRow(Body):
    page: str
    visitors: int
    pageviews: int | None = Field(description="Null under filters: pageviews are counted per page, not per audience.")
    estimate: Literal[True] = sometimes(ROW_ESTIMATE)


class PagesAnswer(Body):
    """`GET /api/v1/stats/pages`."""

    site: str
    from_: date = Field(alias="from")
    to: date
    filters: str = sometimes(FILTERS)
    estimate: bool = sometimes(ESTIMATE)
    results: list[PageRow]


class Cohort(Body):
    cohort: date
    size: int
    retained: list[int] = Field(description="retained[0] == size; periods not begun are left out.")


class RetentionAnswer(Body):
    """`GET /api/v1/stats/retention`."""

    site: str
    unit: Literal["day", "week"]
    from_: date = Field(alias="from")
    to: date
    periods: int
    filters: str = sometimes(FILTERS)
    estimate: bool = sometimes(ESTIMATE)
    cohorts: list[Cohort]


class DroppedAnswer(Body):
    """`GET /api/v1/stats/dropped`."""

    site: str
    from_: date = Field(alias="from")
    to: date
    total: int = Field(description="Events not counted over the range, all reasons together.")
    reasons: dict[str, int] = Field(
        description="Events not counted, by reason: user-agent (a crawler's), datacenter (a cloud or hosting "
        "provider's address), referrer-spam, pattern (a visitor past the site's inhuman rate, flagged for the day), "
        "exclusion (the site's own exclusions). Every reason is named, 0 where none."
    )
    switches: dict[str, bool | int] = Field(
        description="The site's settings that decide them: drop_crawlers, drop_datacenters, drop_referrer_spam, "
        "pattern_pageviews (0: off), exclusions (how many)."
    )
    days: list[dict[str, str | int]] = Field(description="{date, reason: events...} for each day that dropped any.")


class RealtimeAnswer(Body):
    """`GET /api/v1/stats/realtime`."""

    site: str
    visitors: int
    minutes: int


class TopPage(Body):
    page: str
    visitors: int
    pageviews: int


class RecommendationsAnswer(Body):
    """`GET /api/v1/recommendations`."""

    site: str
    user: str
    pages: list[TopPage]


class SeenAnswer(Body):
    """`POST /api/v1/seen`."""

    added: list[bool] = Field(description="added[i]: true if item i was new (at least one bit newly set).")


class UnseenAnswer(Body):
    """`POST /api/v1/unseen`."""

    items: list[str]


class Rejected(Body):
    index: int = Field(description="The event's place in the batch, from 0.")
    error: str


class BatchResult(Body):
    """`POST /api/v1/events`."""

    accepted: int
    bots_dropped: int = Field(
        description="Events dropped as bots: a crawler's User-Agent, a data centre's address, referrer spam, an "
        "inhuman rate."
    )
    rejected: list[Rejected]
    dropped: dict[str, int] | None = Field(
        None,
        description="bots_dropped by reason (user-agent, datacenter, referrer-spam, pattern); absent when every "
        "one was a crawler's User-Agent.",
    )
    excluded: int | None = Field(
        None, description="Events the site's exclusions (addresses, paths, hosts) left uncounted; absent when none."
    )


class NewExport(Body):
    """`GET /api/v1/reports/{fmt}` of a long period (or `async=1`): the job made."""

    job: str
    state: Literal["queued"]
    status_url: str
    file_url: str


class ExportJob(Body):
    """`GET /api/v1/reports/jobs/{job}`."""

    job: str
    state: Literal["queued", "running", "done", "failed"]
    progress: float
    position: int = Field(description="Place in line while queued (0: not waiting).")
    format: Literal["csv", "xlsx", "json"]
    from_: date = Field(alias="from")
    to: date
    filename: str
    message: str = sometimes("While waiting in line: which place.")
    error: str | None = sometimes("When failed: why.")
    status_url: str
    file_url: str


class QueryRow(Body):
    """A row of Plausible's Stats API v2: the metrics in the order asked, and the dimension's value."""

    metrics: list[float | None] = Field(
        description="Null where the number does not exist (a visit metric under filters)."
    )
    dimensions: list[str] = Field(description="[] without a dimension; a time dimension's `YYYY-MM-DD[ HH:00:00]`.")


class QueryMeta(Body):
    """What the answer says about itself: Tally's estimate marks, and what `include` asked for."""

    estimate: bool = Field(description="True when a number in the answer is an estimate (HyperLogLog or stored rows).")
    estimates: dict[str, str] = Field(description="Without a dimension: why each estimated metric is one.")
    total_rows: int = sometimes("With include.total_rows: the rows before pagination.")
    time_labels: list[str] = sometimes("With include.time_labels: every period of the range, those without data too.")


class QueryPagination(Body):
    limit: int
    offset: int


class QueryEcho(Body):
    """The query as resolved: date_range as the first and last moments, in the site's time zone."""

    site_id: str
    metrics: list[str]
    date_range: list[str] = Field(min_length=2, max_length=2)
    filters: list[Any]
    dimensions: list[str]
    order_by: list[list[str]]
    include: dict[str, bool] = Field(description="The include flags set.")
    pagination: QueryPagination


class QueryAnswer(Body):
    """`POST /api/v2/query` (Plausible's Stats API v2)."""

    results: list[QueryRow]
    meta: QueryMeta
    query: QueryEcho
