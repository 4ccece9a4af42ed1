"""The numbers of a filtered audience (analytics.queries.segments): what the dashboard's
cards, chart and panels and the read API show once filters are set.

Visitor numbers come from the segment's day bitmaps: visitors and DAU (BITCOUNT), new
visitors (AND the day's new-visitor bitmap), WAU and MAU (OR over 7 and 30 days of the
segment), unions over any range, the visitors of each row of a breakdown (AND the value's
day bitmap, OR over the days), goal converters, retention cohorts (AND the new visitors).
They are exact unless a day had to be estimated, and every answer says which.

Counts of visits and pageviews exist per value, not per combination of values. A visit
has one value of each visit dimension, so one filter on a visit dimension selects whole
visits: its values' counts summed (`==`, `~`), or the site's less them (`!=`), give the
visits, pageviews, bounce rate and visit duration exactly. A page filter (or a page
goal) selects the visits that viewed a matching page (visit_pages.py), and has its pages'
pageviews. Under anything else (`!=` a page, event goals, two filters) they are None, not
guessed.
"""

import math
from datetime import date, timedelta
from typing import Any, cast

import redis

from .. import dimensions
from ..counts import fold
from ..counts.cohorts import retention as live_retention
from ..models import DimensionDaily, Retention
from ..periods import days_between, monday, period_start
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import SCRATCH_TTL_MS, queue_union, scratch
from ..store.scripts import AND_ROWS
from . import expired, segments, stored, visit_pages
from .breakdown import COUNTS, field_days, rates_over
from .days import UNION_DAILY_SALT as DAILY_SALT
from .days import VISIT_METRICS, percent_change, previous
from .days import daily_values as site_days
from .goals import matching_goals
from .pages import page_timeseries

WINDOWS = (("wau", 7), ("mau", 30))
# Why a number is an estimate, and by how much (each metric of an answer says so, or
# nothing when it is exact).
ESTIMATED = (
    "an estimate: some values had no visitor bitmap on some days, so those days are counted from "
    "HyperLogLogs (±0.81% each) by inclusion-exclusion"
)
STORED = (
    "an estimate: some days' raw keys have expired, so they are counted from the rollup's stored daily rows "
    "(one value exact to ±0.81%; several values or filters combined as if independent, no stated bound)"
)

SKETCHED = (
    "an estimate: some days' raw keys have expired, so they are counted from the HyperLogLogs the rollup stored "
    "(±0.81% each; by inclusion-exclusion where filters combine)"
)

SKETCHED_UNION = (
    "an estimate: some days' raw keys have expired; each such day is counted from the HyperLogLogs the rollup "
    "stored, but not who matched every filter on the same day across several days, so the range is the days "
    "summed times the share of them that are distinct people (the most selective filter's own where one selects, "
    "else the site's); no stated bound"
)


def why(kinds: dict, days) -> str:
    """Why a number over these days is an estimate ("" when it is exact)."""
    found = {kinds[day] for day in days if day in kinds}
    return next((reason for reason in (STORED, SKETCHED, ESTIMATED) if reason in found), "")


def union_why(filters, kinds: dict, days) -> str:
    """why() for the visitors over several days: where their keys expired, a union of
    sketches only for one union of values (segments.visitors()); other filters' days are
    summed and scaled (expired.stored_unions())."""
    reason = why(kinds, days)
    if reason == SKETCHED and len(days) > 1 and not segments.one_union(filters):
        return SKETCHED_UNION
    return reason


def marked(estimates: dict, metric: str) -> dict:
    """{"estimate": why} for a metric that is one, else {}: an answer's per-metric mark."""
    return {"estimate": estimates[metric]} if metric in estimates else {}


# An and_rows.lua call blocks the server while it runs: it takes at most ROW_CALL_KEYS
# keys and about ROW_CALL_BYTES of bitmaps (each day's pair read, ANDed and ORed: four
# times a bitmap's size), a few ms whatever the site's size (a bitmap is visitors-ever / 8);
# one row (its days) always goes in one call.
ROW_CALL_KEYS = 2000
ROW_CALL_BYTES = 16 << 20
MAX_ROWS = 200  # breakdown values whose filtered visitors are counted (the most visitors first)


def daily_values(
    r: redis.Redis, site: SiteInfo, filters, start: date, end: date, windows: bool = True
) -> tuple[dict[date, dict], bool]:
    """({day: visitors, dau, new_visitors, wau, mau, stickiness, pageviews}, estimate). A
    day whose own numbers are estimates says why in "estimate"; with `windows`, one whose
    WAU or MAU are (a day of the 30 before it is) in "estimate_windows"."""
    values, estimated, _, kinds = _days(r, site, filters, start, end, days_between(start, end) if windows else [])
    for day, row in values.items():
        marks = {"estimate": why(kinds, [day])}
        if windows:
            marks["estimate_windows"] = union_why(filters, kinds, [day - timedelta(days=n) for n in range(30)])
        row.update((key, reason) for key, reason in marks.items() if reason)
    return values, estimated


def _days(
    r: redis.Redis,
    site: SiteInfo,
    filters,
    start: date,
    end: date,
    window_days: list[date],
    unions: dict | None = None,
    visit_counts=...,
):
    """Each day's numbers, WAU and MAU for `window_days` only (the OR of 7 and 30 day
    segments is most of the work), and the visitors of each named list of days in
    `unions` (segments.visitors): (values, estimate, {name: visitors}). One segment build."""
    days = days_between(start, end)
    first = min([start, *(day - timedelta(days=29) for day in window_days)])
    with scratch(r, site.id) as tmp:
        segment = segments.build(r, site, filters, days_between(first, end), tmp)
        pipe = r.pipeline(transaction=False)
        at = {}
        for day in days:
            if not site.daily_salt:
                dest = segments.queue_and(pipe, segment, day, keys.new_visitors(site.id, day), f"new:{day}")
                at[day, "new_visitors"] = len(pipe)
                pipe.bitcount(dest)
                pipe.unlink(dest)
                if day in segment.estimated:  # (the day's bitmap holds only the values that have one: a share of it)
                    at[day, "partial"] = len(pipe)
                    pipe.bitcount(segment.keys[day])
                    pipe.bitcount(keys.new_visitors(site.id, day))
                    pipe.bitcount(keys.active(site.id, day))
        # (day, metric) -> the window's days, counted by segments.visitors: on daily-salt
        # sites (a visitor's id is the day's own: an OR of days would mix people up), and
        # where a day of the window is estimated (its bitmap holds only the values that
        # have one: an OR would leave the others' visitors out).
        windows = {}
        for day in window_days:
            for metric, window in WINDOWS:
                span = [day - timedelta(days=n) for n in range(window)]
                if site.daily_salt or segment.estimated.intersection(span):
                    windows[day, metric] = span
        exact_window_days = [day for day in window_days if (day, "mau") not in windows or (day, "wau") not in windows]
        if len(exact_window_days) > 3:
            at.update(_queue_windows_doubling(pipe, segment, days_between(first, end), set(exact_window_days)))
        else:
            for day in exact_window_days:
                for metric, window in WINDOWS:
                    dest = tmp.key(f"{metric}:{day}")
                    queue_union(pipe, dest, [segment.keys[day - timedelta(days=n)] for n in range(window)])
                    at[day, metric] = len(pipe)
                    pipe.bitcount(dest)
                    pipe.unlink(dest)
        answers = pipe.execute()
        totals = segments.visitors(r, segment, unions) if unions else {}
        window_visitors = segments.visitors(r, segment, windows) if windows else {}
    pageviews = _pageviews(r, site, filters, days, visit_counts)
    values = {}
    for day in days:
        row: dict[str, Any] = {
            "visitors": segment.sizes[day],
            "dau": segment.sizes[day],
            "pageviews": pageviews.get(day),
            "new_visitors": None
            if site.daily_salt
            else _new_visitors(answers, at, day, segment.sizes[day], segment.stored.get(day)),
        }
        for metric, _ in WINDOWS:
            if (day, metric) in window_visitors:
                row[metric] = max(window_visitors[day, metric], row["dau"])
            elif (day, metric) in at:
                row[metric] = int(answers[at[day, metric]])
        if "mau" in row:
            row["mau"] = max(row["mau"], row["wau"])  # (two estimates may cross)
            row["stickiness"] = round(row["dau"] / row["mau"], 4) if row["mau"] else 0.0
        values[day] = row
    estimated = bool(segment.estimated.intersection(days_between(first, end)))
    estimated = estimated or any(
        segment.estimate_over(members) for members in [*(unions or {}).values(), *windows.values()]
    )
    kinds = {
        day: (SKETCHED if day in segment.sketched else STORED) if day in segment.stored else ESTIMATED
        for day in segment.estimated | set(segment.stored)
    }
    return values, estimated, totals, kinds


def _new_visitors(answers: list, at: dict, day: date, size: int, stored=None) -> int:
    """The segment's new visitors on a day: exact from its bitmap, or on an estimated day
    (its bitmap holds the visitors of the values that have one) that bitmap's share of new
    visitors applied to the day's estimated size; the site's share when it holds nobody."""
    new = int(answers[at[day, "new_visitors"]])
    if (day, "partial") not in at:
        return new
    i = at[day, "partial"]
    partial, site_new, site_active = (int(a) for a in answers[i : i + 3])
    if not site_active and stored is not None:  # (the day's bitmaps expired: its stored totals)
        partial, site_new, site_active = 0, stored.new_visitors or 0, stored.dau
    return _estimated_new(new, partial, site_new, site_active, size)


def _estimated_new(new: int, partial: int, site_new: int, site_active: int, size: int) -> int:
    """An estimated day's new visitors in the segment: `new` of the `partial` visitors its
    bitmap holds are new; that share (the site's where the bitmap holds nobody) of the
    day's estimated `size`."""
    share = new / partial if partial else (site_new / site_active if site_active else 0.0)
    return min(round(share * size), size)


def _queue_windows_doubling(pipe, segment: segments.Segment, built: list[date], window_days: set[date]) -> dict:
    """Queue WAU and MAU of each window day from ORs of doubling spans, not of 7 and 30
    day segments each: level k of day d is the OR of the 2^k days ending on d, made from
    two of level k-1; WAU(d) = L2(d) | L1(d-4) | L0(d-6), MAU(d) = L4(d) | L3(d-16) |
    L2(d-24) | L1(d-28). About 10 bitmaps read a day instead of 37. Each level's key is
    unlinked after its last use, so a long range keeps ~70 bitmaps at a time, not all.
    Returns {(day, "wau"|"mau"): position of its BITCOUNT}."""
    tmp, first, at = segment.tmp, built[0], {}

    def key(k, day):
        return segment.keys[day] if k == 0 else tmp.key(f"L{k}:{day}")

    last_use = {1: 28, 2: 24, 3: 16, 4: 0}  # days after d that level k of day d is still read
    for d in built:
        for k in range(1, 5):
            if (d - first).days >= 2**k - 1:
                pipe.bitop("OR", key(k, d), key(k - 1, d), key(k - 1, d - timedelta(days=2 ** (k - 1))))
                pipe.pexpire(key(k, d), SCRATCH_TTL_MS)
        if d in window_days:
            for metric, parts in (("wau", ((2, 0), (1, 4), (0, 6))), ("mau", ((4, 0), (3, 16), (2, 24), (1, 28)))):
                dest = tmp.key(f"{metric}:{d}")
                pipe.bitop("OR", dest, *(key(k, d - timedelta(days=back)) for k, back in parts))
                at[d, metric] = len(pipe)
                pipe.bitcount(dest)
                pipe.unlink(dest)
        gone = [
            key(k, d - timedelta(days=back))
            for k, back in last_use.items()
            if (d - timedelta(days=back) - first).days >= 2**k - 1
        ]
        if gone:
            pipe.unlink(*gone)
    return at


def timeseries(
    r: redis.Redis, site: SiteInfo, filters, start: date, end: date, metrics, interval: str = "day"
) -> tuple[list[dict], bool]:
    """Rows as queries.timeseries() gives them, for the filtered audience; and whether
    any number is an estimate."""
    days = days_between(start, end)
    windows = days if {"wau", "mau", "stickiness"} & set(metrics) else []
    groups: dict[date, list[date]] = {}
    if interval != "day":
        for day in days:
            groups.setdefault(period_start(interval, day), []).append(day)
    visits, visit_why = _visit_counts(r, site, filters, days)  # (once: the days' pageviews read them too)
    values, estimated, unions, kinds = _days(r, site, filters, start, end, windows, groups, visits)
    if not set(VISIT_METRICS) & set(metrics):
        visit_why = {}
    reach = 30 if windows else 1  # (a row's WAU and MAU reach back over the 30 days before it)

    def marked(members: list[date]) -> dict:
        """The row's "estimate": why, where a day its numbers count is one."""
        reason = union_why(filters, kinds, [m - timedelta(days=n) for m in members for n in range(reach)]) or _first(
            visit_why, members
        )
        return {"estimate": reason} if reason else {}

    if interval == "day":
        return [
            {"date": day.isoformat(), **_row(metrics, values[day], _visit_rates(visits, [day])), **marked([day])}
            for day in days
        ], estimated
    rows = []
    for first, members in groups.items():
        sums = {
            "visitors": unions[first],
            **{m: _sum(values[day][m] for day in members) for m in metrics if m not in (*VISIT_METRICS, "visitors")},
        }
        rows.append(
            {"date": first.isoformat(), **_row(metrics, sums, _visit_rates(visits, members)), **marked(members)}
        )
    return rows, estimated


def _row(metrics, numbers: dict, visit_rates: dict) -> dict:
    return {m: visit_rates[m] if m in VISIT_METRICS else numbers[m] for m in metrics}


def _visit_counts(
    r: redis.Redis, site: SiteInfo, filters, days: list[date]
) -> tuple[dict[date, dict] | None, dict[date, str]]:
    """Each day's visit counts (pageviews, visits, bounces, duration) of the visits the
    filters select, and why a day's are estimated ({day: reason}), where one filter says
    them. On a visit dimension: a visit has one value of each, so the visits of several
    values are their counts summed, those of none of them the site's less that, exact. On
    a page or a page goal: the visits that viewed a matching page (visit_pages.py). Else
    None: visits are counted per value, not per combination."""
    if len(filters) != 1:
        return None, {}
    f = filters[0]
    if f.prop in ("page", "goal"):
        return visit_pages.counts(r, site, f, days)
    if f.prop not in dimensions.VISIT_DIMENSIONS:
        return None, {}
    values = _matching_values(r, site, f, days) if f.contains else list(f.values)
    parts = [field_days(r, site, days, dimensions.field(f.prop, value)) for value in values]
    counted = {day: {c: sum(p[day][c] for p in parts) for c in COUNTS[1:]} for day in days}
    if not f.negated:
        return counted, {}
    total = field_days(r, site, days, dimensions.TOTAL)
    return {day: {c: max(0, total[day][c] - counted[day][c]) for c in COUNTS[1:]} for day in days}, {}


def _matching_values(r: redis.Redis, site: SiteInfo, f: segments.Filter, days: list[date]) -> list[str]:
    """The values of a `~` or `!~` filter's dimension that contain one of its texts on some
    day: the stored rows' and the days' value sets' (`!~` is the rest: its caller subtracts)."""
    rows = DimensionDaily.objects.filter(site_id=site.id, dimension=f.prop, date__in=days)
    found = set(rows.values_list("value", flat=True).distinct())
    for members in segments.day_members(r, site, days, f.prop).values():
        found.update(members)
    needles = [text.lower() for text in f.values]
    return sorted(v for v in found if v != dimensions.OTHER and any(n in v.lower() for n in needles))


def _visit_rates(counts: dict[date, dict] | None, days: list[date]) -> dict:
    """visits, bounce_rate, visit_duration, views_per_visit over `days` (None without counts)."""
    return dict.fromkeys(VISIT_METRICS) if counts is None else rates_over(counts, days)


def summary(r: redis.Redis, site: SiteInfo, filters, start: date, end: date) -> tuple[dict, bool]:
    """queries.summary()'s numbers for the filtered audience, and whether any is estimated:
    visitors over the range (a union), pageviews and new visitors summed, DAU averaged,
    WAU, MAU and stickiness on the last day (today, for a range that runs past it)."""
    days = days_between(start, end)
    last = min(end, site.today()) if start <= site.today() else end
    visit_counts, visit_why = _visit_counts(r, site, filters, days)
    values, estimated, unions, kinds = _days(r, site, filters, start, end, [last], {"period": days}, visit_counts)
    window = [last - timedelta(days=n) for n in range(30)]
    estimates = {
        "visitors": DAILY_SALT if site.daily_salt and len(days) > 1 else union_why(filters, kinds, days),
        **dict.fromkeys(("dau", "new_visitors"), why(kinds, days)),
        **dict.fromkeys(
            ("wau", "mau", "stickiness"), DAILY_SALT if site.daily_salt else union_why(filters, kinds, window)
        ),
        **dict.fromkeys(VISIT_METRICS, _first(visit_why, days)),
    }
    rows = [values[day] for day in days]
    average_dau = sum(row["dau"] for row in rows) / len(rows)
    dau = int(average_dau + 0.5)
    new_visitors = None if site.daily_salt else sum(row["new_visitors"] for row in rows)
    result = {
        "visitors": max(
            unions["period"], new_visitors or 0
        ),  # (an estimated union is never below the new visitors in it)
        "pageviews": _sum(row["pageviews"] for row in rows),
        "dau": dau,
        "wau": values[last]["wau"],
        "mau": values[last]["mau"],
        "stickiness": round(average_dau / values[last]["mau"], 4) if values[last]["mau"] else 0.0,
        "new_visitors": new_visitors,
    }
    result.update(_visit_rates(visit_counts, days))
    result["estimates"] = {metric: reason for metric, reason in estimates.items() if reason}
    return result, estimated


def aggregate(
    r: redis.Redis, site: SiteInfo, filters, start: date, end: date, metrics, compare: str | None = None
) -> tuple[dict, bool]:
    """{metric: {"value"[, "change"]}} as queries.aggregate(), for the filtered audience."""
    now, estimated = summary(r, site, filters, start, end)
    results = {metric: {"value": now[metric], **marked(now["estimates"], metric)} for metric in metrics}
    if compare:
        before_start, before_end = previous(compare, start, end)
        before, _ = summary(r, site, filters, before_start, before_end)
        for metric in metrics:
            results[metric]["change"] = percent_change(now[metric], before[metric])
    return results, estimated


def breakdown(
    r: redis.Redis,
    site: SiteInfo,
    filters,
    start: date,
    end: date,
    dimension: str,
    candidates: list[str],
    bounds: dict[str, tuple[int, int]] | None = None,
    shown: int | None = None,
) -> tuple[list[dict], bool]:
    """The filtered visitors of each candidate value of `dimension` ("page", "event" or a
    visit dimension), most first, values with nobody left out: [{"value", "visitors",
    "estimate"}]. A value's visitors over the range are the union over the days of (its
    day bitmap AND the segment's); a value without a bitmap on some day it had visitors
    is estimated: its visitors scaled by the share of the site's visitors in the segment.
    A filter on the same dimension also picks the rows: under source==Google the sources
    list Google alone, not the other sources its visitors also came from that day.

    With `shown` (the first rows the caller shows) and the candidates' `bounds`
    ({value: (visitor-days, largest day's visitors)}: candidate_pages(), candidate_values()),
    an estimated row that cannot reach the first `shown` keeps its lower bound instead of
    its union (_out_of_reach()): the rows shown, and which rows have visitors, are the same."""
    days = days_between(start, end)
    candidates = [value for value in candidates if all(f.admits(value) for f in filters if f.prop == dimension)][
        :MAX_ROWS
    ]
    with scratch(r, site.id) as tmp:
        segment = segments.build(r, site, filters, days, tmp)
        live = [day for day in days if day not in segment.stored]  # (the others: expired.stored_breakdown())
        # The bounds are the stored rows' numbers: they speak for the keys only while every
        # day's keys live (a page's go before the day's: keep_page_days).
        keyed = len(live) == len(days) and (
            dimension != "page" or days[0] > site.today() - timedelta(days=site.keep_page_days - 1)
        )
        bitmapped = {
            value: [day for day in live if name in segment.bitmapped[day]]
            for value in candidates
            for name in [dimensions.field(dimension, value)]
        }
        # A value with a day of visitors in the range (its bounds' largest day, of days
        # counted here, not imported) and no bitmap on any day of it had visitors on a day
        # without one: no need to ask the days which values they had.
        unbitmapped = (
            {v for v in candidates if not bitmapped[v] and v in bounds and bounds[v][1] > 0}
            if bounds is not None and keyed
            else set()
        )
        present = segments.present(r, site, live, dimension, [v for v in candidates if v not in unbitmapped])
        calls: list[tuple[list, list]] = []
        counted: list[str] = []  # (the values with a bitmap some day, in the calls' order)
        width = max(1, int(cast(int, r.strlen(keys.active(site.id, live[-1])))) if live else 1)
        call_keys = max(2, min(ROW_CALL_KEYS, 2 * (ROW_CALL_BYTES // (4 * width))))
        estimated = []
        for value in candidates:
            name = dimensions.field(dimension, value)
            with_bitmap = bitmapped[value]
            if with_bitmap:
                if not calls or len(calls[-1][0]) + 2 * len(with_bitmap) > call_keys:
                    calls.append(([tmp.key("and-part"), tmp.key("and-acc")], []))
                for day in with_bitmap:
                    calls[-1][0].extend((segment.keys[day], keys.dimension_bitmap(site.id, day, name)))
                calls[-1][1].append(len(with_bitmap))
                counted.append(value)
            hidden = value in unbitmapped or any(
                value in present[day] or dimensions.OTHER in present[day] for day in live if day not in with_bitmap
            )
            if live and (hidden or segment.estimate_over(live)):
                estimated.append(value)
        # (one script call a few dozen rows: the ANDs, their OR and the counts in the server)
        found = dict(zip(counted, (row for answer in AND_ROWS.run_many(r, calls) for row in answer)))
        rows: dict[str, dict[str, Any]] = {
            value: {"value": value, "visitors": int(found[value][0]) if value in found else 0, "estimate": False}
            for value in candidates
        }
        if estimated:
            share = _share(r, site, segment, live)
            skip = (
                _out_of_reach(rows, estimated, share, bounds, shown)
                if bounds is not None and shown is not None and keyed
                else set()
            )
            hll = _value_visitors(r, site, live, dimension, [value for value in estimated if value not in skip])
            for value in estimated:
                if value in skip:  # (it has visitors, fewer than the last row shown: never on the page)
                    rows[value]["visitors"], rows[value]["estimate"] = 1, True
                    continue
                guess = round(hll[value] * share)
                row = rows[value]
                if guess > row["visitors"]:  # (a lower bound counted from bitmaps stays, when larger)
                    row["visitors"], row["estimate"] = guess, True
                row["estimate"] = row["estimate"] or value not in found
        if segment.stored:
            for value, late in expired.stored_breakdown(site, segment, dimension, candidates).items():
                if late:
                    daily = [int(n) for n in found[value][1]] if value in found else []
                    union = expired.union_estimate(
                        site, days, rows[value]["visitors"], sum(daily), len(daily), late, segment.ratios
                    )
                    rows[value]["visitors"], rows[value]["estimate"] = union, True
    ranked = sorted(
        (row for row in rows.values() if row["visitors"] > 0), key=lambda row: (-row["visitors"], row["value"])
    )
    return ranked, any(row["estimate"] for row in ranked)


def goals(
    r: redis.Redis, site: SiteInfo, filters, start: date, end: date, visitors: int, search: str = ""
) -> tuple[list[dict], bool]:
    """Each goal's converters in the filtered audience: [{"goal", "visitors",
    "conversion_rate"}] (conversion rate over the audience's `visitors`); with `search`,
    only the goals whose name contains it (case-insensitive)."""
    days = days_between(start, end)
    rows: list[dict[str, Any]] = []
    estimated = False
    goal_list = matching_goals(site, search)
    with scratch(r, site.id) as tmp:
        segment = segments.build(r, site, filters, days, tmp)
        events = segments.present(r, site, days, "event", [g.event_name for g in goal_list if g.event_name])
        pages = segments.day_members(r, site, days, "page") if any(g.page_pattern for g in goal_list) else {}
        totals = stored.day_totals(site, days)
        pipe = r.pipeline(transaction=False)
        at, daily, sized = {}, {}, {}
        by_rows: dict[str, list[date]] = {}
        for n, goal in enumerate(goal_list):
            parts, by_rows[goal.name] = [], []
            for day in days:
                if day in segment.stored:
                    by_rows[goal.name].append(day)
                    continue
                if goal.event_name:
                    kept, complete = segments.value_fields(
                        "event", goal.event_name, segment.bitmapped[day], events[day]
                    )
                else:
                    kept, complete = segments.value_fields(
                        "page", goal.page_pattern, segment.bitmapped[day], pages[day]
                    )
                sealed_pages = (
                    not goal.event_name and day in totals and totals[day].pages_sealed
                )  # (its page index is gone)
                if (
                    not complete or sealed_pages
                ) and day in totals:  # (converters without their bitmap: the stored rows say how many)
                    by_rows[goal.name].append(day)
                    continue
                estimated = estimated or not complete
                if kept:
                    union = tmp.key(f"goal:{n}:{day}:any")
                    queue_union(pipe, union, [keys.dimension_bitmap(site.id, day, f) for f in kept])
                    parts.append(segments.queue_and(pipe, segment, day, union, f"goal:{n}:{day}"))
            if parts:
                daily[n] = len(pipe)
                for part in parts:
                    pipe.bitcount(part)
                dest = tmp.key(f"goal:{n}")
                queue_union(pipe, dest, parts)
                at[n] = len(pipe)
                pipe.bitcount(dest)
                sized[n] = len(parts)
        answers = pipe.execute()
        late = {}
        for n, goal in enumerate(goal_list):
            if by_rows[goal.name]:
                estimated = True
                seen = int(answers[at[n]]) if n in at else 0
                counted = sum(int(c) for c in answers[daily[n] : daily[n] + sized[n]]) if n in daily else 0
                late[goal.name] = expired.union_estimate(
                    site,
                    days,
                    seen,
                    counted,
                    sized.get(n, 0),
                    expired.converters_by_rows(site, segment, goal, by_rows[goal.name], totals),
                    segment.ratios,
                )
    for n, goal in enumerate(goal_list):
        converters = min(visitors, late[goal.name]) if goal.name in late else (int(answers[at[n]]) if n in at else 0)
        rows.append(
            {
                "goal": goal.name,
                "visitors": converters,
                "events": None,
                "conversion_rate": round(100 * converters / visitors, 2) if visitors else 0.0,
            }
        )
    rows.sort(key=lambda row: (-row["visitors"], row["goal"]))
    return rows, estimated or segment.estimate_over(days)


def retention(
    r: redis.Redis, site: SiteInfo, filters, unit: str, start: date, end: date, periods: int
) -> tuple[list[dict], bool]:
    """Cohorts of the filtered audience's new visitors (those first seen on the cohort's
    day, and in the segment that day), and how many were active n days (weeks) later."""
    today = site.today()
    if unit == "day":
        cohorts = [day for day in days_between(start, end) if day <= today]
        last = today
        cohort_days = cohorts
    else:
        cohorts = sorted({monday(day) for day in days_between(start, end) if monday(day) <= monday(today)})
        last = monday(today)
        cohort_days = [w + timedelta(days=n) for w in cohorts for n in range(7)]
    if not cohorts:
        return [], False
    with scratch(r, site.id) as tmp:
        segment = segments.build(r, site, filters, cohort_days, tmp)
        pipe = r.pipeline(transaction=False)
        by_day = {
            day: segments.queue_and(pipe, segment, day, keys.new_visitors(site.id, day), f"cohort:{day}")
            for day in cohort_days
        }
        made = by_day
        if unit == "week":
            made = {week: tmp.key(f"cohort-week:{week}") for week in cohorts}
            for week in cohorts:
                queue_union(pipe, made[week], [by_day[week + timedelta(days=n)] for n in range(7)])
        pipe.execute()
        rows = live_retention(r, site, unit, cohorts, last, tmp, live=True, cohort_of=lambda _, cohort: made[cohort])
        if segment.estimated.intersection(cohort_days):
            rows = _estimated_cohorts(r, site, unit, segment, rows, by_day, last, tmp)
    return (
        [{"cohort": c.isoformat(), "size": size, "retained": retained[: periods + 1]} for c, size, retained in rows],
        segment.estimate_over(cohort_days),
    )


def _estimated_cohorts(
    r: redis.Redis, site: SiteInfo, unit: str, segment: segments.Segment, rows: list, by_day: dict, last: date, tmp
) -> list:
    """Cohorts that hold an estimated day, scaled to its estimate. On such a day the
    segment's bitmap holds only the visitors of the values that have one (none at all for
    a filter on a value past the day's bitmaps), so its cohort undercounts. The day's
    cohort is estimated as _estimated_new() estimates its new visitors (the bitmap's share
    of new visitors, else the site's, applied to the day's estimated size), and its
    retained counts are the bitmap's own cohort scaled to that size, or where the bitmap
    holds nobody of it, the site's own cohort's retention at that size: an estimate that
    the audience keeps its visitors as the part that has bitmaps, or as the site does."""
    unit_days = {c: [c] if unit == "day" else [c + timedelta(days=n) for n in range(7)] for c, _, _ in rows}
    touched = [c for c, _, _ in rows if any(d in segment.estimated for d in unit_days[c])]
    pipe = r.pipeline(transaction=False)
    for c in touched:
        for day in unit_days[c]:
            pipe.bitcount(by_day[day])
            if day in segment.estimated:
                pipe.bitcount(segment.keys[day])
                pipe.bitcount(keys.new_visitors(site.id, day))
                pipe.bitcount(keys.active(site.id, day))
    answers = iter(pipe.execute())
    size_of = {}
    for c in touched:
        total = 0
        for day in unit_days[c]:
            new = int(next(answers))
            if day in segment.estimated:
                partial, site_new, site_active = int(next(answers)), int(next(answers)), int(next(answers))
                if not site_active and day in segment.stored:  # (the day's bitmaps expired: its stored totals)
                    partial, site_new, site_active = 0, segment.stored[day].new_visitors or 0, segment.stored[day].dau
                new = _estimated_new(new, partial, site_new, site_active, segment.sizes[day])
            total += new
        size_of[c] = total
    empty = [c for c, size, _ in rows if c in size_of and size == 0 and size_of[c] > 0]
    sealed = [c for c in empty if all(day in segment.stored and segment.stored[day].sealed for day in unit_days[c])]
    live = [c for c in empty if c not in sealed]  # (a sealed cohort's bitmaps are gone: the rollup's stored row)
    site_rows = (
        {c: (size, retained) for c, size, retained in live_retention(r, site, unit, live, last, tmp, live=True)}
        if live
        else {}
    )
    site_rows.update(
        {
            row.cohort: (row.size, row.retained)
            for row in Retention.objects.filter(site_id=site.id, unit=unit, cohort__in=sealed)
        }
    )
    scaled = []
    for c, size, retained in rows:
        if c not in size_of or size_of[c] == size:
            scaled.append((c, size, retained))
            continue
        estimate = size_of[c]
        base, kept = (size, retained) if size else site_rows.get(c, (0, [0] * len(retained)))
        scaled.append((c, estimate, [min(estimate, round(k * estimate / base)) if base else 0 for k in kept]))
    return scaled


def _pageviews(r: redis.Redis, site: SiteInfo, filters, days: list[date], counts=...) -> dict[date, int]:
    """Exact pageviews a day where one filter says what they are: those of the pages a
    page filter names (`==`; `!=`: the site's less theirs), or those _visit_counts has (of
    the visits a filter on a visit dimension selects; of the pages a `~` page filter or a
    page goal matches); else {} (None in the rows)."""
    if len(filters) != 1 or filters[0].prop != "page" or filters[0].op not in ("==", "!="):
        counts = (
            _visit_counts(r, site, filters, days)[0] if counts is ... else counts
        )  # (the caller's, when it has them)
        return {} if counts is None else {day: c["pageviews"] for day, c in counts.items()}
    by_page = [_page_pageviews(r, site, path, days) for path in filters[0].values]
    named = {day: sum(p[day] for p in by_page) for day in days}
    if filters[0].op == "==":
        return named
    everyone = site_days(r, site, days[0], days[-1], windows=False)
    return {day: max(0, everyone[day]["pageviews"] - named[day]) for day in days}


def _page_pageviews(r: redis.Redis, site: SiteInfo, path: str, days: list[date]) -> dict[date, int]:
    """A page's pageviews each day (its stored rows for final days: queries.pages)."""
    return {
        date.fromisoformat(row["date"]): row["pageviews"] for row in page_timeseries(r, site, path, days[0], days[-1])
    }


def _share(r: redis.Redis, site: SiteInfo, segment: segments.Segment, days: list[date]) -> float:
    """The segment's visitors over the range, as a share of the site's."""
    inside = segments.visitors(r, segment, {"all": days})["all"]
    pipe = r.pipeline(transaction=False)
    pipe.pfcount(*(keys.site_visitors(site.id, day) for day in days))
    everyone = pipe.execute()[0]
    return min(1.0, inside / everyone) if everyone else 0.0


HLL_MARGIN = 0.1  # (twelve standard errors of an HLL estimate, either way: a bound, not a guess)


def _out_of_reach(
    rows: dict[str, dict], estimated: list[str], share: float, bounds: dict[str, tuple[int, int]], shown: int
) -> set[str]:
    """The estimated values whose union breakdown() need not count: whatever it is, the
    row stays below the first `shown` rows and has visitors. Every row's visitors are at
    least what its bitmaps counted (`rows` now), so `shown` rows reach the threshold, the
    `shown`-th largest of those; an estimated row is at most its visitor-days (more than
    its union by an HLL's error) times the share, and has visitors when its largest day
    alone gives one after the share. Only values no bitmap counted are left out (their
    rows are estimates whatever their union: the answer's marks stay). The bounds come from
    each day's stored visitors, HLL estimates on some days: HLL_MARGIN covers their error."""
    lower = sorted((row["visitors"] for row in rows.values()), reverse=True)
    if len(lower) < shown or lower[shown - 1] < 1:
        return set()
    threshold = lower[shown - 1]
    skip = set()
    for value in estimated:
        if value not in bounds:
            continue
        visitor_days, peak = bounds[value]
        most = math.ceil((visitor_days * (1 + HLL_MARGIN) + 2) * share)
        has_visitors = (peak * (1 - HLL_MARGIN) - 2) * share >= 0.5
        if rows[value]["visitors"] == 0 and most < threshold and has_visitors:
            skip.add(value)
    return skip


def _value_visitors(
    r: redis.Redis, site: SiteInfo, days: list[date], dimension: str, values: list[str]
) -> dict[str, int]:
    """Each value's visitors over the range, unfiltered (HLL unions)."""
    fold.ensure_hlls(r, site.id, [(day, dimensions.field(dimension, value)) for value in values for day in days])
    pipe = r.pipeline(transaction=False)
    for value in values:
        name = dimensions.field(dimension, value)
        pipe.pfcount(*(keys.field_visitors(site.id, day, name) for day in days))
    return dict(zip(values, pipe.execute()))


def _first(reasons: dict[date, str], days) -> str:
    """The reason of the first of `days` that has one ("" for none)."""
    return next((reasons[day] for day in days if day in reasons), "")


def _sum(numbers):
    numbers = list(numbers)
    return None if any(n is None for n in numbers) else sum(numbers)
