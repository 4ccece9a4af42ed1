"""A filtered audience on days whose raw keys expired (analytics.queries.stored): its
breakdown rows, goal converters and unions over ranges that hold such days, estimated from
the rows the rollups stored, and joined to the days still counted from bitmaps.

A day's part is a value's (or goal's) stored visitors times the segment's share of the
day, or the segment's own day where a filter names the value; a range's is the days
summed times the site's repeat ratio, corrected by how often the audience itself comes
back where some of its days are exact (union_estimate). Estimates, with no stated bound:
every answer that holds one says so.
"""

from datetime import date

import redis

from .. import dimensions
from ..models import page_pattern_regex
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import queue_union
from .pages import page_union
from .stored import repeat_ratio, value_rows


def union_estimate(
    site: SiteInfo, days: list[date], seen: int, counted: int, exact_days: int, added: float, memo: dict
) -> int:
    """An audience's visitors over `days`, where `exact_days` of them were counted from
    bitmaps (`seen` people over them, `counted` their days' people summed) and the others
    are `added` people summed over their days, estimated: all the days' people summed,
    times the share of distinct people the site's stored DAU, WAU and MAU give over as
    many days (repeat_ratio), times how much more (or less) often than everyone this
    audience comes back where both are known (its exact days). Never below `seen`, never
    above the sum."""
    relative = 1.0
    if exact_days > 1 and seen and counted:
        site_ratio = repeat_ratio(site.id, sorted(days)[-exact_days:], memo)
        relative = (seen / counted) / site_ratio if site_ratio else 1.0
    total = counted + added
    return int(min(total, max(seen, round(total * min(1.0, repeat_ratio(site.id, days, memo) * relative)))))


def stored_breakdown(site: SiteInfo, segment, dimension: str, values: list[str]) -> dict[str, float]:
    """Each value's visitors in the segment on the days answered from stored rows, summed
    over them (for union_estimate()): its stored visitors that day times the segment's
    share of the day's visitors, or, where a filter names the value (`==`), the segment's
    day shared among the values it names by their visitors. An estimate."""
    days = sorted(segment.stored)
    naming = [f for f in segment.filters if f.prop == dimension and f.op == "=="]
    rows = value_rows(site.id, days, dimension, sorted({*values, *(v for f in naming for v in f.values)}))
    return {
        value: sum(share_of(value, rows[day], segment.sizes[day], segment.stored[day].dau, naming) for day in days)
        for value in values
    }


def share_of(value: str, people: dict[str, int], size: int, dau: int, naming: list) -> float:
    """One day's visitors of a value in a segment of `size` of the day's `dau` visitors,
    from each value's stored visitors that day (`people`): the segment's share of the
    value's, as if independent; or where filters name the value (`naming`), the
    segment's visitors shared among the values each names, by their visitors."""
    own = min(people.get(value, 0), dau)
    named = [f for f in naming if value in f.values]
    if named:
        f = min(named, key=lambda f: len(f.values))
        among = sum(min(people.get(v, 0), dau) for v in f.values)
        return size * own / among if among else 0.0
    return own * size / dau if dau else 0.0


def converters_by_rows(site: SiteInfo, segment, goal, days: list[date], totals: dict) -> float:
    """A goal's converters in the segment on days its bitmaps cannot say (their keys
    expired, or the goal had no bitmap that day), from the rows the rollup stored: a day's
    converters (its event's stored visitors, or those of the pages its pattern matches,
    summed) times the segment's share of that day's visitors, or all of them where the
    filters are that goal alone; summed over the days (for union_estimate())."""
    if goal.event_name:
        rows = value_rows(site.id, days, "event", [goal.event_name])
        people = {day: rows[day].get(goal.event_name, 0) for day in days}
    else:
        match = page_pattern_regex(goal.page_pattern).fullmatch
        rows = value_rows(site.id, days, "page")
        people = {
            day: sum(n for path, n in rows[day].items() if path != dimensions.OTHER and match(path)) for day in days
        }
    naming = [f for f in segment.filters if f.prop == "goal" and f.op == "==" and goal.name in f.values]
    if naming and min(len(f.values) for f in naming) == 1:
        return float(sum(segment.sizes[day] for day in days))  # (the segment is this goal's converters)
    return sum(share_of(goal.name, {goal.name: people[day]}, segment.sizes[day], totals[day].dau, []) for day in days)


def one_value(filters) -> tuple[str, str] | None:
    """(property, value) of a segment that is one value's visitors (`source==Google`,
    `page==/pricing`), else None: a day whose keys expired then has its stored row as
    its number."""
    if len(filters) == 1 and filters[0].op == "==" and len(filters[0].values) == 1:
        return filters[0].prop, filters[0].values[0]
    return None


def one_page(filters) -> str | None:
    """The page of a segment that is one page's visitors (`page==PATH`), else None."""
    found = one_value(filters)
    return found[1] if found and found[0] == "page" else None


def stored_unions(r: redis.Redis, segment, ranges: dict, own: dict | None = None) -> dict:
    """The segment's visitors over ranges holding days answered from stored rows (their
    bitmaps expired): the days' sizes summed, times the share of distinct people its
    filters' own sketches give (`own`, segments._own_ratios()) where they are all there,
    else times the site's repeat_ratio() over them, times how much more (or less) often
    than everyone the segment's visitors come back where both are known (its exact days:
    the OR of their bitmaps over their sizes summed, against the same of the site's
    active bitmaps). One page's visitors are its own HLLs' union instead
    (pages.page_union: its row's number). Never below that OR nor the largest day, never
    above the sum of the days."""
    own = own or {}
    sid = segment.site.id
    pipe = r.pipeline(transaction=False)
    at = {}
    for n, (name, days) in enumerate(ranges.items()):
        exact = [day for day in days if day not in segment.estimated]
        if exact:
            for what, names in (
                ("seg", [segment.keys[day] for day in exact]),
                ("site", [keys.active(sid, day) for day in exact]),
            ):
                dest = segment.tmp.key(f"stored-union:{what}:{n}")
                queue_union(pipe, dest, names)
                at[name, what] = len(pipe)
                pipe.bitcount(dest)
                pipe.unlink(dest)
            at[name, "dau"] = len(pipe)
            for day in exact:
                pipe.bitcount(keys.active(sid, day))
    answers = pipe.execute()
    result = {}
    page = one_page(segment.filters)
    for name, days in ranges.items():
        sizes = [segment.sizes[day] for day in days]
        if page is not None:  # (one page's visitors: its own period and day HLLs, as its breakdown row)
            seen = int(answers[at[name, "seg"]]) if (name, "seg") in at else 0
            union = page_union(r, segment.site, min(days), max(days), page)
            result[name] = min(sum(sizes), max(seen, max(sizes), union))
            continue
        seen, relative = 0, 1.0
        if (name, "seg") in at:
            exact = [day for day in days if day not in segment.estimated]
            seen, site_seen = int(answers[at[name, "seg"]]), int(answers[at[name, "site"]])
            site_sum = sum(int(n) for n in answers[at[name, "dau"] : at[name, "dau"] + len(exact)])
            seg_sum = sum(segment.sizes[day] for day in exact)
            if len(exact) > 1 and seen and site_seen and seg_sum:
                relative = (seen / seg_sum) / (site_seen / site_sum)
        ratio = own[name] if name in own else repeat_ratio(sid, days, segment.ratios) * relative
        scaled = round(sum(sizes) * min(1.0, ratio))
        result[name] = min(sum(sizes), max(seen, max(sizes), scaled))
    return result
