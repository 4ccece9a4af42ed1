"""The visits that include a page or an event: what a page or goal filter's visits, bounce
rate, visit duration and views per visit are, by Plausible's definition (the visits with
a matching pageview or custom event).

lib/visits.lua counts each visit under every distinct page it viewed and custom event it
sent (`visit_page` and `visit_event` fields: the visit's visits, bounces and duration on
the day it started; a page's pageviews are its own counters'), and the rollups store those as rows like any
visit value's. One page's or event's are then exact. Several are their counts summed: a
visit that viewed two of them counts twice, so that sum is marked an upper bound. A
visit's pages and events past the day's quota, or past its 32nd, count under "(other)":
the days with any are marked too. Days before visits' pages were counted (an upgrade)
make the answer None, not a guess.
"""

from datetime import date
from typing import cast

import redis

from .. import dimensions
from ..models import DimensionDaily, Goal, page_pattern_regex
from ..sites import SiteInfo
from ..store import keys
from . import segments
from .breakdown import COUNTS, field_days
from .days import daily_values
from .pages import pageviews_of

SEVERAL = (
    "an estimate: a visit that viewed several of the matching pages counts once for each, "
    "so visits are an upper bound (bounce rate and duration are those visits')"
)
PAST_QUOTA = (
    "an estimate: some visits viewed pages past the day's page quota or past their 32nd page; "
    'those pages\' visits count under "(other)", not under the page'
)


def counts(
    r: redis.Redis, site: SiteInfo, f: segments.Filter, days: list[date]
) -> tuple[dict[date, dict] | None, dict[date, str]]:
    """Each day's visit counts (pageviews, visits, bounces, duration) of the visits that
    viewed a page `f` selects or sent an event it names (`page ==` or `~`, `goal ==`), and
    why a day's are estimated ({day: reason}); (None, {}) where they cannot be said."""
    wanted = _wanted(site, f)
    if wanted is None:
        return None, {}
    counted = _counted_days(r, site, days)
    if not counted.issuperset(_days_with_pageviews(r, site, days)):
        return None, {}
    fields_by_day: dict[date, list[str]] = {day: [] for day in days}
    for dimension, value, match in wanted:
        # (value is a str where match is None: _wanted() gives one or the other)
        found = (
            {day: [cast(str, value)] for day in days} if match is None else _matching(r, site, days, dimension, match)
        )
        for day in days:
            fields_by_day[day] += [dimensions.field(dimension, v) for v in found[day]]
    names = sorted({name for found in fields_by_day.values() for name in found})
    parts = {name: field_days(r, site, days, name) for name in names}
    others = [field_days(r, site, days, dimensions.field(d, dimensions.OTHER)) for d in {d for d, _, _ in wanted}]
    page = dimensions.VISIT_PAGE + dimensions.SEP
    paths = {
        day: [name[len(page) :] for name in dict.fromkeys(found) if name.startswith(page)]
        for day, found in fields_by_day.items()
    }
    views = pageviews_of(r, site, paths)  # (a page's own: its pageviews are not kept with its visits)
    events = any(dimension == dimensions.VISIT_EVENT for dimension, _, _ in wanted)
    result: dict[date, dict[str, int | None]] = {}
    why: dict[date, str] = {}
    for day in days:
        rows = [parts[name][day] for name in dict.fromkeys(fields_by_day[day])]
        result[day] = {c: sum(row[c] for row in rows) for c in COUNTS[1:]}
        # (a custom event's visits have no pageviews of "those events": None, not 0 a visit)
        result[day]["pageviews"] = None if events else sum(views.get((day, path), 0) for path in paths[day])
        if sum(1 for row in rows if row["visits"]) > 1:
            why[day] = SEVERAL
        elif any(other[day]["visits"] for other in others):
            why[day] = PAST_QUOTA
    return result, why


def _wanted(site: SiteInfo, f: segments.Filter) -> list[tuple[str, str | None, object]] | None:
    """What the filter selects visits by: (dimension, value, None) for a named page or
    event, (dimension, None, predicate) for the pages a `~` or a page goal's pattern
    matches; None where it selects no visits this way (`!=`: the visits that viewed some
    other page are not those; a visit dimension)."""
    if f.negated or f.prop not in ("page", "goal"):
        return None
    if f.prop == "page":
        return (
            [(dimensions.VISIT_PAGE, value, None) for value in f.values]
            if f.op == "=="
            else [(dimensions.VISIT_PAGE, None, f.admits)]
        )
    goals = {g.name: g for g in Goal.objects.filter(site_id=site.id, name__in=f.values)}
    wanted: list[tuple[str, str | None, object]] = []
    for name in f.values:
        goal = goals.get(name)
        if goal is not None and goal.page_pattern:
            wanted.append((dimensions.VISIT_PAGE, None, page_pattern_regex(goal.page_pattern).fullmatch))
        else:  # (a goal's event, or a name that is no goal: a custom event's, as segments.py takes it)
            wanted.append((dimensions.VISIT_EVENT, goal.event_name if goal is not None else name, None))
    return wanted


def _matching(r: redis.Redis, site: SiteInfo, days: list[date], dimension: str, match) -> dict[date, list[str]]:
    """The values of `dimension` that `match` among each day's (stored rows, or the day's set)."""
    found: dict[date, set[str]] = {day: set() for day in days}
    rows = DimensionDaily.objects.filter(site_id=site.id, dimension=dimension, date__in=days)
    for day, value in rows.values_list("date", "value"):
        found[day].add(value)
    for day, members in segments.day_members(r, site, days, dimension).items():
        found[day].update(members)
    return {day: sorted(v for v in values if v != dimensions.OTHER and match(v)) for day, values in found.items()}


def _counted_days(r: redis.Redis, site: SiteInfo, days: list[date]) -> set[date]:
    """The days whose visits had their pages counted: a stored row, or a value in the day's set."""
    stored = set(
        DimensionDaily.objects.filter(site_id=site.id, dimension=dimensions.VISIT_PAGE, date__in=days)
        .values_list("date", flat=True)
        .distinct()
    )
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.hget(keys.dimension_sizes(site.id, day), dimensions.VISIT_PAGE)
    return stored | {day for day, n in zip(days, pipe.execute()) if n and int(n) > 0}


def _days_with_pageviews(r: redis.Redis, site: SiteInfo, days: list[date]) -> set[date]:
    values = daily_values(r, site, days[0], days[-1], windows=False)
    return {day for day in days if values[day]["pageviews"]}
