"""Breakdowns by a visit dimension (source, country, browser, entry page...) and the site's
visit totals (visits, bounce rate, visit duration, views per visit).

Per-day numbers come from the rows the rollups stored for final days, and from the raw
day tables lib/visits.lua writes for the others (analytics.counts.dimensions). Counts
(pageviews, visits, bounces, duration, exits) are exact sums over the days. Visitors of a
value over a range are a true union, not a sum of days: a multi-key PFCOUNT over the
value's day HLLs (±0.81%), never shown above its visits or pageviews, or exact where
the value had a bitmap every day it had visitors (queries/exact.py). Once a day's raw
keys have expired (the site's keep_daily_days), the value's HLL of that day is its stored
sketch (counts/sketches.py, set back into a scratch key), as page unions do; a union is
never shown below the value's largest day (the stored rows keep each day's visitors);
counts stay, from the rows.
"""

from collections.abc import Iterable, Mapping
from datetime import date, timedelta
from typing import Any, cast

import redis
from django.db.models import Max, Q, Sum

from .. import dimensions
from ..counts import fold, sketches
from ..counts.dimensions import dimension_days
from ..models import DailyMetrics, DimensionDaily
from ..periods import days_between
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import scratch
from . import kept
from .exact import count_unions, exact_sources, exact_visitors
from .stored import day_totals, imported_days

METRICS = ("visitors", "visits", "pageviews", "bounce_rate", "visit_duration", "views_per_visit")
MAX_UNION_VALUES = 2000  # values whose visitors are counted as a union (the most visitor-days first)
COUNTS = ("visitors", "pageviews", "visits", "bounces", "duration")
SUMS = (*COUNTS, "peak", "imported")  # (what _sums() gives a value)


def visit_totals(r: redis.Redis, site: SiteInfo, start: date, end: date) -> dict:
    """{"visits", "bounce_rate", "visit_duration", "views_per_visit"} over the range, from
    the visits that started in it."""
    total_dim, total_value = dimensions.split(dimensions.TOTAL)
    sums = _sums(r, site, start, end, total_dim, "").get(total_value, dict.fromkeys(COUNTS, 0))
    return _rates(sums)


def candidate_values(
    r: redis.Redis,
    site: SiteInfo,
    start: date,
    end: date,
    dimension: str,
    limit: int,
    search: str = "",
    bounds: dict | None = None,
) -> list[str]:
    """The values a filtered breakdown counts, the most visitor-days first: breakdown()'s
    ranking before it counts any union (a filtered row's visitors come from bitmaps, so
    the unfiltered unions would be paid for nothing). `bounds`, when given, gets each
    one's (visitor-days, largest day's visitors), as candidate_pages() gives them."""
    span = days_between(start, end)
    sums = _range_sums(r, site, span, dimension, search, day_totals(site, span))[0]
    ranked = _ranked(sums)[:limit]
    if bounds is not None:
        bounds.update((v, (sums[v]["visitors"], sums[v]["peak"])) for v in ranked)
    return ranked


def _range_sums(r: redis.Redis, site: SiteInfo, span: list[date], dimension: str, search: str, totals):
    """_sums() over the span, its closed head's kept (queries/kept.py) where it has one:
    (sums, the Part or None, the head's sums, the open days' sums)."""
    head = kept.closed_head(site, span)
    if len(head) < kept.MIN_DAYS:
        return _sums(r, site, span[0], span[-1], dimension, search), None, {}, {}
    part = kept.Part(r, site, head, totals)
    open_from = head[-1] + timedelta(days=1)
    open_sums = _sums(r, site, open_from, span[-1], dimension, search) if open_from <= span[-1] else {}
    head_sums = part.table(f"sums:{dimension}", SUMS, lambda: _sums(r, site, head[0], head[-1], dimension, ""))
    needle = search.lower()  # (the head's sums are kept whole: the search applies here)
    sums = _joined([{v: s for v, s in head_sums.items() if needle in v.lower()}, open_sums])
    return sums, part, head_sums, open_sums


def _ranked(sums: dict[str, dict]) -> list[str]:
    """The values with visits or pageviews, by visitor-days (their days' visitors summed)."""
    return sorted(
        (v for v, s in sums.items() if s["visits"] or s["pageviews"]),
        key=lambda v: (-sums[v]["visitors"], -sums[v]["visits"], v),
    )


def breakdown(
    r: redis.Redis,
    site: SiteInfo,
    start: date,
    end: date,
    dimension: str,
    limit: int = 10,
    page: int = 1,
    search: str = "",
) -> tuple[list[dict], int]:
    """One page of a dimension's rows, most visitors first, and how many rows there are.
    Rows: {dimension: value, "visitors", "visits", "pageviews", "bounce_rate",
    "visit_duration", "views_per_visit"}; for exit_page {"exit_page", "visits"} (visits
    that ended there)."""
    if dimension not in dimensions.ALL:
        raise ValueError(f"unknown dimension: {dimension}")
    span = days_between(start, end)
    totals = day_totals(site, span)
    sums, part, head_sums, open_sums = _range_sums(r, site, span, dimension, search, totals)
    open_from = part.last + timedelta(days=1) if part else start
    if dimension == dimensions.EXIT:
        rows: list[dict[str, Any]] = [{dimension: v, "visits": s["visits"]} for v, s in sums.items() if s["visits"] > 0]
        rows.sort(key=lambda row: (-row["visits"], row[dimension]))
        return rows[(page - 1) * limit : page * limit], len(rows)
    ranked = _ranked(sums)
    imported = {day for day, t in totals.items() if t.imported}  # (their visitors are in the sums' "imported")
    every = [day for day in span if day not in imported and day >= open_from]
    gone = {day for day in every if day in totals and totals[day].sealed and totals[day].dau}  # (keys expired)
    days = [day for day in every if day not in gone]
    # Values are counted in order of visitor-days (no union exceeds them), in rounds: once
    # the page's last row has more visitors than any value not counted yet could, the rest
    # cannot enter the page (on a Zipf-shaped dimension, the first round of page + 5).
    need = limit * page
    wanted = min(need + 5, MAX_UNION_VALUES)
    while True:
        counted = ranked[:wanted]
        if part:
            rows = _kept_unions(r, site, dimension, counted, sums, part, head_sums, open_sums, days, gone)
        else:
            rows, exact, frozen, field = _unions(r, site, dimension, counted, sums, days, gone)
        rest = ranked[wanted:MAX_UNION_VALUES]
        if not rest:
            break
        best = sorted((row["visitors"] for row in rows), reverse=True)[:need]
        if len(best) == need and best[-1] > max(_most(sums[v]) for v in rest):
            break
        wanted = min(2 * wanted, MAX_UNION_VALUES)
    order = lambda row: (-row["visitors"], -row["visits"], row[dimension])  # noqa: E731
    rows.sort(key=order)
    shown = rows[(page - 1) * limit : page * limit]
    if part:  # (every row is as exact as it can be already)
        return shown, len(ranked)
    # The rows shown are exact where their values have bitmaps (a BITOP OR of each: ~1 ms
    # for 7 days of a million ids, ~6 ms for 90, where a PFCOUNT union takes ~0.3 ms; so
    # the ranking is the HLLs', and only the page's rows pay for exactness).
    thawed_values = {value for value in counted if frozen[value]}
    exact.update(
        exact_visitors(
            r,
            site,
            days,
            [
                field[row[dimension]]
                for row in shown
                if field[row[dimension]] not in exact and row[dimension] not in thawed_values
            ],
        )
    )
    for row in shown:
        if field[row[dimension]] in exact and row[dimension] not in thawed_values:
            row["visitors"] = exact[field[row[dimension]]] + sums[row[dimension]]["imported"]
    return sorted(shown, key=order), len(ranked)


def _joined(parts: list[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    """_sums() of adjoining ranges, as one range's."""
    joined: dict[str, dict[str, int]] = {}
    for sums in parts:
        for value, s in sums.items():
            row = joined.get(value)
            if row is None:
                joined[value] = dict(s)
                continue
            for c in (*COUNTS, "imported"):
                row[c] += s[c]
            row["peak"] = max(row["peak"], s["peak"])
    return joined


def _kept_unions(r, site: SiteInfo, dimension: str, counted: list[str], sums, part, head_sums, open_sums, days, gone):
    """The rows of these values where the range has a kept closed head (queries/kept.py):
    a value's visitors are the OR of its head's bitmap and its open days' bitmaps where
    both hold all of them (exact), else the union of its head's HLL and its open days'."""
    field = {value: dimensions.field(dimension, value) for value in counted}
    seen = lambda s, v: v in s and s[v]["visitors"] > s[v]["imported"]  # noqa: E731 (visitors on days not imported)
    in_head = {value for value in counted if seen(head_sums, value)}
    with scratch(r, site.id) as tmp:
        thawed = sketches.thaw(r, site.id, [(day, field[v]) for v in counted for day in sorted(gone)], tmp)
        frozen = {name for _, name in thawed}
        open_exact = exact_sources(r, site, days, [field[v] for v in counted if field[v] not in frozen])
        head_exact = part.bitmaps([field[v] for v in counted if v in in_head and field[v] not in frozen])
        sources = {}
        for value in counted:
            f = field[value]
            head_ok = f in head_exact or value not in in_head
            open_ok = f in open_exact or not seen(open_sums, value)
            if f not in frozen and head_ok and open_ok and (f in head_exact or f in open_exact):
                sources[f] = [*([head_exact[f]] if f in head_exact else []), *open_exact.get(f, [])]
        exact = count_unions(r, site.id, sources)
        rest = [value for value in counted if field[value] not in exact]
        only = fold.bitmap_only(r, site.id, days)
        fold.ensure_hlls(r, site.id, [(day, field[v]) for v in rest for day in days if field[v] in only[day]])
        unions = part.unions([field[v] for v in rest if v in in_head])
        pipe = r.pipeline(transaction=False)
        counting = []
        for value in rest:
            f = field[value]
            parts = [*([unions[f]] if f in unions else []), *(keys.dimension_visitors(site.id, day, f) for day in days)]
            parts += [key for (_, name), key in thawed.items() if name == f]
            if parts:
                pipe.pfcount(*parts)
                counting.append(value)
        found = dict(zip(counting, pipe.execute()))
    rows = []
    for value in counted:
        s = sums[value]
        if field[value] in exact:
            visitors = exact[field[value]] + s["imported"]
        else:
            union = found.get(value, 0)
            visitors = min(max(union, s["peak"]) + s["imported"], max(s["pageviews"], s["visits"], s["imported"]))
        rows.append({dimension: value, "visitors": visitors, **_rates(s), "pageviews": s["pageviews"]})
    return rows


def _most(s: dict[str, int]) -> int:
    """The most visitors a value's row can show (breakdown() never shows more)."""
    return min(s["visitors"], max(s["pageviews"], s["visits"], s["imported"]))


def _unions(r: redis.Redis, site: SiteInfo, dimension: str, counted: list[str], sums, days: list[date], gone: set):
    """The rows of these values, visitors a union over the days (exact where a value's
    bitmap stands in for its HLL every day), and what breakdown() makes exact after."""
    field = {value: dimensions.field(dimension, value) for value in counted}
    # Values whose bitmap stands in for their HLL on some days (counts/fold.py) are
    # counted from their bitmaps where they have one every day, else those days are folded.
    only = fold.bitmap_only(r, site.id, days)
    partly = [value for value in counted if any(field[value] in only[day] for day in days)]
    exact = exact_visitors(r, site, days, [field[value] for value in partly])
    fold.ensure_hlls(r, site.id, [(day, field[v]) for v in partly if field[v] not in exact for day in days])
    with scratch(r, site.id) as tmp:
        thawed = sketches.thaw(r, site.id, [(day, field[v]) for v in counted for day in sorted(gone)], tmp)
        frozen = {v: [key for (_, name), key in thawed.items() if name == field[v]] for v in counted}
        for value in counted:
            if frozen[value]:
                exact.pop(field[value], None)  # (its expired days' visitors are in sketches: a union of HLLs)
        pipe = r.pipeline(transaction=False)
        for value in counted:
            parts = [*(keys.dimension_visitors(site.id, day, field[value]) for day in days), *frozen[value]]
            if field[value] not in exact and parts:
                pipe.pfcount(*parts)
        unions = iter(pipe.execute())
        found = {
            value: exact[field[value]] if field[value] in exact else next(unions, 0)
            for value in counted
            if field[value] in exact or days or frozen[value]
        }
    rows = []
    for value in counted:
        s = sums[value]
        union = found.get(value, 0)  # (over the days not imported)
        visitors = min(max(union, s["peak"]) + s["imported"], max(s["pageviews"], s["visits"], s["imported"]))
        rows.append({dimension: value, "visitors": visitors, **_rates(s), "pageviews": s["pageviews"]})
    return rows, exact, frozen, field


def _sums(
    r: redis.Redis, site: SiteInfo, start: date, end: date, dimension: str, search: str
) -> dict[str, dict[str, int]]:
    """value -> its counts summed over the range ("visitors": the sum of daily visitors,
    an upper bound of the union used for ranking; "peak": its largest day's, a lower
    bound; "imported": its visitors on imported days, summed, not in the union or the
    peak); exit_page's visits are its exits."""
    final = set(
        DailyMetrics.objects.filter(site_id=site.id, final=True, date__range=(start, end)).values_list(
            "date", flat=True
        )
    )
    imported = imported_days(site.id, start, end)
    sums: dict[str, dict[str, int]] = {}
    for days, added in ((final - imported, False), (final & imported, True)):
        if not days:
            continue
        query = DimensionDaily.objects.filter(site_id=site.id, dimension=dimension, date__in=days)
        if search:
            query = query.filter(Q(value__icontains=search))
        found = query.values("value").annotate(peak=Max("visitors")).annotate(**{c: Sum(c) for c in COUNTS})
        for stored in cast(Iterable[Mapping[str, Any]], found):  # (the plugin's rows lack annotate(**...)'s sums)
            row = sums.setdefault(stored["value"], dict.fromkeys(SUMS, 0))
            for c in COUNTS:
                row[c] += stored[c] or 0
            if added:  # (imported days' visitors are summed: queries/stored.imported_days())
                row["imported"] += stored["visitors"] or 0
            else:
                row["peak"] = max(row["peak"], stored["peak"] or 0)
    prefix = dimension + dimensions.SEP
    needle = search.lower()
    live = [day for day in days_between(start, end) if day not in final]
    for fields in dimension_days(r, site.id, live).values():
        for name, n in fields.items():
            if not name.startswith(prefix):
                continue
            value = name[len(prefix) :]
            if needle and needle not in value.lower():
                continue
            row = sums.setdefault(value, dict.fromkeys(SUMS, 0))
            row["visitors"] += n["visitors"]
            row["peak"] = max(row["peak"], n["visitors"])
            row["pageviews"] += n["pageviews"]
            row["visits"] += n["exits"] if dimension == dimensions.EXIT else n["visits"]
            row["bounces"] += n["bounces"]
            row["duration"] += n["duration"]
    return sums


def _rates(s: dict[str, int]) -> dict:
    visits = s["visits"]
    return {
        "visits": visits,
        "bounce_rate": round(100 * s["bounces"] / visits) if visits else None,
        "visit_duration": round(s["duration"] / visits) if visits else None,
        "views_per_visit": round(s["pageviews"] / visits, 2) if visits and s["pageviews"] is not None else None,
    }


def field_days(r: redis.Redis, site: SiteInfo, days: list[date], field: str) -> dict[date, dict[str, int]]:
    """One visit dimension field's exact counts each day ({"pageviews", "visits",
    "bounces", "duration"}): stored rows for final days, the day's counts hash otherwise."""
    dimension, value = dimensions.split(field)
    result = {day: dict.fromkeys(COUNTS[1:], 0) for day in days}
    final = set(DailyMetrics.objects.filter(site_id=site.id, final=True, date__in=days).values_list("date", flat=True))
    for row in DimensionDaily.objects.filter(site_id=site.id, dimension=dimension, value=value, date__in=final):
        result[row.date] = {c: getattr(row, c) for c in COUNTS[1:]}
    live = [day for day in days if day not in final]
    if live:
        pipe = r.pipeline(transaction=False)
        for day in live:
            pipe.hget(keys.dimension_counts(site.id, day), field)
        for day, packed in zip(live, pipe.execute()):
            if packed:
                numbers = dict(zip(dimensions.TABLES, dimensions.COUNTS.unpack_from(packed)))
                result[day] = {c: numbers[c] for c in COUNTS[1:]}
    return result


def rates_over(day_counts: dict[date, dict[str, int]], days: list[date]) -> dict:
    """visits, bounce_rate, visit_duration, views_per_visit over `days`, from field_days()'s
    counts: summed first, then the rates, as over any range. Pageviews None on a day (a
    goal filter's custom event: not pageviews) make views per visit None."""
    sums: dict[str, Any] = {c: sum(day_counts[day][c] for day in days) for c in COUNTS[1:] if c != "pageviews"}
    views = [day_counts[day]["pageviews"] for day in days]
    sums["pageviews"] = None if None in views else sum(views)
    return _rates(sums)
