"""The read side: every number the read API, the dashboard and the exports show.

Nothing here writes (scratch keys for BITOP aside): closed days come from the rows the
rollups stored, the rest is counted live through analytics.counts. The names below are
the package's surface; the dashboard reads through them and the models only.

    days.py             timeseries per day/week/month, a period's summary and aggregate
    hours.py            a day or two by the hour
    pages.py            top pages of a range, one page's days, path search
    breakdown.py        rows by a visit dimension (sources, devices, countries...), visit totals
    goals.py            goal conversions, custom property breakdowns, revenue
    segments.py         filters: a filtered audience's visitors day by day, as bitmaps
    estimates.py        where the bitmaps cannot say: HLL inclusion-exclusion
    filtered.py         every number above for a filtered audience (exact, or marked estimated)
    stored.py           days whose raw keys expired: their stored rows, the site's repeat ratio
    expired.py          a filtered audience's rows, converters and unions over such days
    runner.py           Query -> Result: the one way every reader asks for the numbers above
    kept.py             breakdown parts kept ready over a range's closed days
    warm.py             the nightly warm-up: the parts read lately, made again for the new day
    visit_pages.py      the visits that viewed a page: a page filter's visit metrics
    funnels.py          a funnel's steps: visitors who reached each, day by day
    places.py           visitors within some distance of a place (with a city database)
    retention.py        retention cohorts
    realtime.py         visitors in the last five minutes
    live.py             the same, pushed to open dashboards (ASGI, pub/sub)
    access.py           who may read which site
"""

from ..counts.cohorts import DAY_PERIODS, WEEK_PERIODS
from . import filtered, segments
from .breakdown import breakdown, visit_totals
from .days import (
    AGGREGATE_METRICS,
    COMPARISONS,
    DEFAULT_METRICS,
    METRICS,
    PERIOD_METRICS,
    VISIT_METRICS,
    WINDOW_METRICS,
    aggregate,
    comparable_metrics,
    daily_values,
    first_counted_day,
    has_events,
    percent_change,
    previous,
    summary,
    timeseries,
)
from .funnels import funnel
from .goals import event_properties, every_property, goals, properties, property_names
from .hours import HOUR_METRICS, MAX_HOUR_DAYS, hourly, last_24_hours, visitors_until
from .pages import page_timeseries, ranked_pages, search_pages, top_pages
from .places import (
    CITY_PROPERTIES,
    NO_CITY_DATABASE,
    cities_stored,
    city_database,
    city_values_stored,
    needs_city_database,
    visitors_near,
)
from .realtime import REALTIME_MINUTES, realtime_keys, realtime_now, realtime_view, realtime_visitors
from .retention import retention
from .runner import Memo, Query, Result, run
from .stored import imported_days, without_imports

__all__ = [
    "Memo",
    "Query",
    "Result",
    "run",
    "imported_days",
    "without_imports",
    "funnel",
    "filtered",
    "segments",
    "previous",
    "breakdown",
    "goals",
    "visitors_near",
    "CITY_PROPERTIES",
    "NO_CITY_DATABASE",
    "cities_stored",
    "city_database",
    "city_values_stored",
    "needs_city_database",
    "event_properties",
    "every_property",
    "property_names",
    "properties",
    "visit_totals",
    "HOUR_METRICS",
    "MAX_HOUR_DAYS",
    "hourly",
    "AGGREGATE_METRICS",
    "COMPARISONS",
    "aggregate",
    "comparable_metrics",
    "has_events",
    "percent_change",
    "DAY_PERIODS",
    "DEFAULT_METRICS",
    "METRICS",
    "PERIOD_METRICS",
    "VISIT_METRICS",
    "REALTIME_MINUTES",
    "WEEK_PERIODS",
    "WINDOW_METRICS",
    "daily_values",
    "first_counted_day",
    "page_timeseries",
    "realtime_keys",
    "realtime_now",
    "realtime_view",
    "realtime_visitors",
    "last_24_hours",
    "visitors_until",
    "ranked_pages",
    "retention",
    "search_pages",
    "summary",
    "timeseries",
    "top_pages",
]
