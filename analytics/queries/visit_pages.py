"""The visits that include a page: what a page (or page goal) filter's visits, bounce rate,
visit duration and views per visit are, by Plausible's definition (the visits with a
matching pageview).

lib/visits.lua counts each visit under every distinct page it viewed (`visit_page`
fields: the visit's visits, bounces and duration on the day it started, the page's own
pageviews), and the rollups store those as rows like any visit value's. One page's are
then exact. Several pages' are their counts summed: a visit that viewed two of them counts
twice, so that sum is marked an upper bound. A visit's pages past the day's page quota,
or past its 32nd, count under "(other)": the days with any are marked too. Days before
the visits' pages were counted (an upgrade) make the answer None, not a guess.
"""
from datetime import date

import redis

from .. import dimensions
from ..models import DimensionDaily, Goal, page_pattern_regex
from ..sites import SiteInfo
from ..store import keys
from . import segments
from .breakdown import COUNTS, field_days
from .days import daily_values

SEVERAL = ("an estimate: a visit that viewed several of the matching pages counts once for each, "
           "so visits are an upper bound (bounce rate and duration are those visits')")
PAST_QUOTA = ("an estimate: some visits viewed pages past the day's page quota or past their 32nd page; "
              "those pages' visits count under \"(other)\", not under the page")


def counts(r: redis.Redis, site: SiteInfo, f: segments.Filter, days: list[date]) -> tuple[dict[date, dict] | None, dict[date, str]]:
    """Each day's visit counts (pageviews, visits, bounces, duration) of the visits that
    viewed a page `f` selects (`page ==` or `~`, or a goal whose pattern is a page), and
    why a day's are estimated ({day: reason}); (None, {}) where they cannot be said."""
    match = _matcher(site, f)
    if match is None:
        return None, {}
    counted = _counted_days(r, site, days)
    if not counted.issuperset(_days_with_pageviews(r, site, days)):
        return None, {}
    if f.prop == "page" and f.op == "==":
        values_by_day = {day: list(f.values) for day in days}
    else:
        values_by_day = _matching(r, site, days, match)
    values = sorted({v for found in values_by_day.values() for v in found})
    parts = {value: field_days(r, site, days, dimensions.field(dimensions.VISIT_PAGE, value)) for value in values}
    other = field_days(r, site, days, dimensions.field(dimensions.VISIT_PAGE, dimensions.OTHER))
    result, why = {}, {}
    for day in days:
        rows = [parts[value][day] for value in values_by_day[day]]
        result[day] = {c: sum(row[c] for row in rows) for c in COUNTS[1:]}
        if sum(1 for row in rows if row["visits"]) > 1:
            why[day] = SEVERAL
        elif other[day]["visits"]:
            why[day] = PAST_QUOTA
    return result, why


def _matcher(site: SiteInfo, f: segments.Filter):
    """A page predicate for the filter, or None where it selects no page views: `!=` (the
    visits that viewed some other page are not those), a goal of a custom event."""
    if f.op == "!=":
        return None
    if f.prop == "page":
        return f.admits
    if f.prop != "goal":
        return None
    goals = {g.name: g for g in Goal.objects.filter(site_id=site.id, name__in=f.values)}
    if any(name not in goals or not goals[name].page_pattern for name in f.values):
        return None
    matchers = [page_pattern_regex(goals[name].page_pattern).fullmatch for name in f.values]
    return lambda path: any(m(path) for m in matchers)


def _matching(r: redis.Redis, site: SiteInfo, days: list[date], match) -> dict[date, list[str]]:
    """The pages that `match` among each day's visit pages (stored rows, or the day's set)."""
    found: dict[date, set[str]] = {day: set() for day in days}
    rows = DimensionDaily.objects.filter(site_id=site.id, dimension=dimensions.VISIT_PAGE, date__in=days)
    for day, value in rows.values_list("date", "value"):
        found[day].add(value)
    for day, members in segments.day_members(r, site, days, dimensions.VISIT_PAGE).items():
        found[day].update(members)
    return {day: sorted(v for v in values if v != dimensions.OTHER and match(v)) for day, values in found.items()}


def _counted_days(r: redis.Redis, site: SiteInfo, days: list[date]) -> set[date]:
    """The days whose visits had their pages counted: a stored row, or a value in the day's set."""
    stored = set(DimensionDaily.objects.filter(site_id=site.id, dimension=dimensions.VISIT_PAGE, date__in=days)
                 .values_list("date", flat=True).distinct())
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.hget(keys.dimension_sizes(site.id, day), dimensions.VISIT_PAGE)
    return stored | {day for day, n in zip(days, pipe.execute()) if n and int(n) > 0}


def _days_with_pageviews(r: redis.Redis, site: SiteInfo, days: list[date]) -> set[date]:
    values = daily_values(r, site, days[0], days[-1], windows=False)
    return {day for day in days if values[day]["pageviews"]}
