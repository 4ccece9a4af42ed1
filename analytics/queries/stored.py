"""What a filter reads on days whose raw keys have expired: the rollup's stored rows.

A day's raw keys expire by the site's policy (analytics.rollups.expiry): the page index,
page HLLs and page counters after `keep_page_days`, the per-value bitmaps after
`keep_segment_days`, everything else after `keep_daily_days`. The rows the rollup stored
for the day stay for good: the day's totals (DailyMetrics), each page's (PageDaily), each
visit value's (DimensionDaily) and each custom event's (EventDaily) visitors and counts.

A filter on such a day is answered from those rows: one value's own visitors are its row
(exact where the rollup counted them from the value's bitmap, else an HLL's ±0.81%), a
set of values is their rows summed (at most the day's visitors), `!=` is the day's
visitors less that, and several filters are combined as if independent (the day's
visitors times each filter's share): an estimate with no stated bound, which the answer
marks. Nothing here reads a key that may have expired as zero.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from math import exp, log, prod
from typing import cast

import redis
from django.db.models import QuerySet

from .. import dimensions
from ..counts import sketches
from ..counts.unions import range_visitors
from ..models import DailyMetrics, DimensionDaily, EventDaily, PageDaily, Site
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import Scratch


@dataclass(frozen=True)
class DayTotals:
    """A day's stored totals (DailyMetrics), and whether its raw keys (all but the page
    keys; the page keys) have expired since: then its rows are the record."""

    dau: int
    visitors: int
    pageviews: int
    new_visitors: int | None
    sealed: bool = False
    pages_sealed: bool = False
    segments_sealed: bool = False  # (its filter bitmaps expired: any there now hold late events alone)
    imported: bool = False  # (its rows are another product's daily totals: analytics.imports.plausible)
    imported_log: int | None = None  # (which import's: ImportedLog)


def day_totals(site: SiteInfo, days: list[date]) -> dict[date, DayTotals]:
    """The stored totals of those of these days the rollup has stored."""
    now = datetime.now(UTC)
    policy = cast(Site, site)  # (the rows' sealed() read only the keep_*_days a SiteInfo has too)
    result = {}
    for row in DailyMetrics.objects.filter(site_id=site.id, date__in=days):
        sealed, pages_sealed = row.sealed(policy, now)
        result[row.date] = DayTotals(
            row.dau,
            row.visitors,
            row.pageviews,
            row.new_visitors,
            sealed,
            pages_sealed,
            row.segments_sealed(policy, now),
            row.imported_id is not None,
            row.imported_id,
        )
    return result


def imported_days(site_id: int, start: date, end: date) -> set[date]:
    """The days of start..end whose rows are another product's daily totals (a Plausible
    CSV import, DailyMetrics.imported): a visitor there cannot be told from one on another
    day, so their visitors add to a range's, not into a union."""
    return set(
        DailyMetrics.objects.filter(site_id=site_id, date__range=(start, end), imported__isnull=False).values_list(
            "date", flat=True
        )
    )


def value_rows(
    site_id: int, days: list[date], dimension: str, names: list[str] | None = None
) -> dict[date, dict[str, int]]:
    """{day: {value: visitors}} stored for a dimension ("page", "event", "prop": custom
    property groups "event SEP property SEP value", or a visit dimension) on these days:
    the values named, or every value (`names` None). "(other)" is among them when the
    day's quota put values there."""
    if not days:
        return {}
    if dimension == "prop":
        groups: dict[date, dict[str, int]] = {day: {} for day in days}
        props = EventDaily.objects.filter(site_id=site_id, date__in=days).exclude(property="")
        for day, *group, visitors in props.values_list("date", "name", "property", "value", "visitors"):
            name = dimensions.SEP.join(group)
            if names is None or name in names:
                groups[day][name] = visitors
        return groups
    rows: QuerySet[PageDaily] | QuerySet[EventDaily] | QuerySet[DimensionDaily]
    if dimension == "page":
        rows = PageDaily.objects.filter(site_id=site_id, date__in=days)
        value = "path"
    elif dimension == "event":
        rows = EventDaily.objects.filter(site_id=site_id, date__in=days, property="")
        value = "name"
    else:
        rows = DimensionDaily.objects.filter(site_id=site_id, date__in=days, dimension=dimension)
        value = "value"
    if names is not None:
        rows = rows.filter(**{f"{value}__in": [*names, dimensions.OTHER]})
    found: dict[date, dict[str, int]] = {day: {} for day in days}
    for day, name, visitors in rows.values_list("date", value, "visitors"):
        found[day][name] = visitors
    return found


def without_imports(site_id: int, start: date, end: date) -> tuple[tuple[date, date] | None, bool]:
    """The range with its imported days left out, as Plausible's `include.imports=false`
    asks: imported history sits before (or, rarely, after) the days Tally counted, so
    they are cut at the range's ends: ((start, end), False), or (None, False) when every
    day is imported. Imported days left inside (history imported between days Tally
    counted) cannot be cut out of a range: (range, True), and they stay counted."""
    days = imported_days(site_id, start, end)
    while start <= end and start in days:
        start += timedelta(days=1)
    while end >= start and end in days:
        end -= timedelta(days=1)
    if start > end:
        return None, False
    return (start, end), any(start < day < end for day in days)


def segment_size(dau: int, terms: list[tuple[bool, int]]) -> int:
    """A day's filtered visitors from each filter's own: `terms` (negate, visitors of the
    values it names). One filter is its number (the day's visitors less it for `!=`);
    several are combined as if independent."""
    if dau <= 0:
        return 0
    shares = [(dau - min(v, dau) if negate else min(v, dau)) / dau for negate, v in terms]
    return round(dau * prod(shares))


def gone_days(site: SiteInfo, days: list[date], totals: dict[date, DayTotals] | None = None) -> set[date]:
    """The days among these that had visitors but whose day bitmaps have expired."""
    totals = day_totals(site, days) if totals is None else totals
    return {day for day in days if day in totals and totals[day].dau and totals[day].sealed}


def visitors_over(r: redis.Redis, site: SiteInfo, ranges: dict, tmp: Scratch) -> tuple[dict, str]:
    """range_visitors() that reads no expired day as nobody: ({name: visitors}, why any is
    an estimate: "" (none), "sketches", "rows" or "imported"). A range holding days whose
    bitmaps expired is a PFCOUNT of its days' HLLs, the expired days' from their stored
    sketches (±0.81%); where a sketch is missing (a day rolled up before they were kept),
    its days' visitors summed times repeat_ratio(), never below the union of its days
    still in Redis nor its largest day, never above the sum. Imported days' visitors are
    added to the rest's (imported_days())."""
    every = sorted({day for days in ranges.values() for day in days})
    totals = day_totals(site, every)
    imported = {day for day in every if day in totals and totals[day].imported}
    if imported:
        rest = {name: [day for day in days if day not in imported] for name, days in ranges.items()}
        result, _ = visitors_over(r, site, rest, tmp)
        for name, days in ranges.items():
            result[name] += sum(totals[day].dau for day in days if day in imported)
        return result, "imported" if any(len(days) > 1 for days in ranges.values()) else ""
    gone = gone_days(site, every, totals)
    if not gone:
        return range_visitors(r, site, ranges, tmp), ""
    thawed = sketches.thaw(r, site.id, [(day, sketches.SITE) for day in gone], tmp)
    whole = [name for name, days in ranges.items() if all((d, sketches.SITE) in thawed for d in days if d in gone)]
    pipe = r.pipeline(transaction=False)
    for name in whole:
        pipe.pfcount(*(thawed.get((day, sketches.SITE)) or keys.site_visitors(site.id, day) for day in ranges[name]))
    result = {name: int(n) for name, n in zip(whole, pipe.execute())}
    rest = {name: days for name, days in ranges.items() if name not in result}
    if not rest:
        return result, "sketches"
    live = range_visitors(r, site, {name: [d for d in days if d not in gone] for name, days in rest.items()}, tmp)
    memo: dict = {}
    for name, days in rest.items():
        daily = [totals[d].dau if d in totals else 0 for d in days]
        if not any(d in gone for d in days):
            result[name] = live[name]
            continue
        scaled = round(sum(daily) * repeat_ratio(site.id, days, memo))
        result[name] = min(sum(daily), max(live[name], max(daily, default=0), scaled))
    return result, "rows"


def _repeat_points(site_id: int, last: date, memo: dict | None) -> list | None:
    """[(1, 1.0), (7, WAU share), (30, MAU share)] from the stored row of the last final
    day up to `last`, or None; kept in `memo` (a caller's, for the length of one answer:
    a filtered chart asks for the ratio of each of its days' windows)."""
    if memo is not None and (site_id, last) in memo:
        return memo[site_id, last]
    row = DailyMetrics.objects.filter(site_id=site_id, final=True, date__lte=last, mau__gt=0).order_by("-date").first()
    points = None
    if row is not None:
        dau = dict(
            DailyMetrics.objects.filter(
                site_id=site_id, date__range=(row.date - timedelta(days=29), row.date)
            ).values_list("date", "dau")
        )
        week = sum(dau.get(row.date - timedelta(days=k), 0) for k in range(7))
        month = sum(dau.get(row.date - timedelta(days=k), 0) for k in range(30))
        points = [
            (1, 1.0),
            (7, min(1.0, row.wau / week) if week else 1.0),
            (30, min(1.0, row.mau / month) if month else 1.0),
        ]
        points = [
            (n, max(ratio, 1e-3)) for n, ratio in points
        ]  # (rows that disagree after an expiry must not give log(0))
    if memo is not None:
        memo[site_id, last] = points
    return points


def repeat_ratio(site_id: int, days: list[date], memo: dict | None = None) -> float:
    """The share of a range's day visitors that are distinct people over it, as the
    rollups stored it for the site: 1 for a day, WAU over the seven days' DAU summed for
    7 days, MAU over the thirty's for 30 (the stored row of the range's last final day),
    interpolated in log(days) between them, extended past 30 days along the 7-to-30 slope."""
    n = len(days)
    if n <= 1:
        return 1.0
    points = _repeat_points(site_id, max(days), memo)  # (callers' lists may run backwards: a window's days)
    if points is None:
        return 1.0
    (a, ra), (b, rb) = (points[0], points[1]) if n <= 7 else (points[1], points[2])
    slope = (log(rb) - log(ra)) / (log(b) - log(a))
    return min(1.0, exp(log(ra) + slope * (log(n) - log(a))))
