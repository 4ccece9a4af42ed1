"""Goals and custom properties: conversions over a range.

A goal converts a visitor who sent its custom event, or viewed a page matching its
pattern, in the range. Converters are a union over the range: exact for an event goal
over days since it was made (its event is pinned, so it has a bitmap each day:
queries/exact.py), else a multi-key PFCOUNT over the day HLLs of the event or of every
matching page (±0.81%, never above the events); events are exact counts; conversion
rate = converters / the range's visitors, in percent.
Revenue sums what the goal's events sent, per currency.
"""

from datetime import date
from typing import Any

import redis
from django.db.models import Max, Sum

from .. import dimensions
from ..dimensions import OTHER, SEP
from ..models import DailyMetrics, EventDaily, Goal, PageDaily, page_pattern_regex
from ..periods import days_between
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import scratch
from .exact import exact_visitors
from .pages import page_cover, page_unions
from .stored import imported_days

UNION_CHUNK = 500  # keys per PFMERGE when a page pattern matches many page-days


def goals(r: redis.Redis, site: SiteInfo, start: date, end: date, visitors: int, search: str = "") -> list[dict]:
    """One row per goal of the site, most converters first: {"goal", "visitors",
    "events", "conversion_rate", "revenue": {currency: amount}} (revenue only when sent).
    With `search`, only the goals whose name contains it (case-insensitive): the others'
    conversions are not counted at all."""
    imported = imported_days(site.id, start, end)  # (their converters are summed, after the union of the rest)
    days = [day for day in days_between(start, end) if day not in imported]
    rows = []
    for goal in matching_goals(site, search):
        if goal.event_name:
            converters, events = _event_goal(r, site, days, goal.event_name) if days else (0, 0)
        else:
            converters, events = _page_goal(r, site, days, goal.page_pattern) if days else (0, 0)
        if imported:
            people, count = _imported_goal(site, imported, goal)
            converters, events = converters + people, events + count
        row: dict[str, Any] = {
            "goal": goal.name,
            "visitors": converters,
            "events": events,
            "conversion_rate": round(100 * converters / visitors, 2) if visitors else 0.0,
        }
        if goal.event_name and (money := revenue(r, site, days, goal.event_name)):
            row["revenue"] = money
        rows.append(row)
    rows.sort(key=lambda row: (-row["visitors"], -row["events"], row["goal"]))
    return rows


def matching_goals(site: SiteInfo, search: str = "") -> list[Goal]:
    """The site's goals whose name contains `search`, matched in Python as page paths and
    property values are (the database's LIKE would fold the case of ASCII letters only)."""
    needle = search.lower()
    return [goal for goal in Goal.objects.filter(site_id=site.id) if needle in goal.name.lower()]


def _event_goal(r: redis.Redis, site: SiteInfo, days: list[date], name: str) -> tuple[int, int]:
    final = _final(site, days)
    stored = EventDaily.objects.filter(site_id=site.id, name=name, property="", date__in=final).aggregate(
        events=Sum("events"), most=Max("visitors")
    )
    live = [day for day in days if day not in final]
    field = dimensions.field("event", name)
    union = exact_visitors(r, site, days, [field]).get(field)  # (a goal's event is pinned: it has bitmaps)
    pipe = r.pipeline(transaction=False)
    for day in live:
        pipe.get(keys.event_count(site.id, day, name))
    if union is None:
        pipe.pfcount(*(keys.event_visitors(site.id, day, name) for day in days))
    counts = pipe.execute()
    if union is None:
        union = counts.pop()
    events = (stored["events"] or 0) + sum(int(c or 0) for c in counts)
    return min(max(union, stored["most"] or 0), events), events


def _imported_goal(site: SiteInfo, days: set[date], goal: Goal) -> tuple[int, int]:
    """(converters, events or pageviews) of a goal over imported days: their rows summed."""
    if goal.event_name:
        found = EventDaily.objects.filter(site_id=site.id, name=goal.event_name, property="", date__in=days).aggregate(
            people=Sum("visitors"), count=Sum("events")
        )
        return found["people"] or 0, found["count"] or 0
    match = page_pattern_regex(goal.page_pattern).fullmatch
    people = count = 0
    for path, visitors, views in PageDaily.objects.filter(site_id=site.id, date__in=days).values_list(
        "path", "visitors", "pageviews"
    ):
        if path != OTHER and match(path):
            people, count = people + visitors, count + views
    return people, count


def _final(site: SiteInfo, days: list[date]) -> set[date]:
    """The days of the range whose rows the rollups stored for good (their counts come from
    the rows: the raw keys expire; a union leaves out the days whose HLLs are gone, and is
    never shown below the largest such day's visitors)."""
    if not days:
        return set()
    return set(
        DailyMetrics.objects.filter(site_id=site.id, final=True, date__range=(days[0], days[-1])).values_list(
            "date", flat=True
        )
    ).intersection(days)  # (the days asked for: a goal's imported days are counted apart)


def _page_goal(r: redis.Redis, site: SiteInfo, days: list[date], pattern: str) -> tuple[int, int]:
    """(converters, pageviews) of a page goal: the matching pages of final days from their
    stored rows, of the others from the days' page index; converters, for a single page
    with its bitmaps every day, their exact union (queries/exact.py), else the union of the
    matching pages' HLLs over the range (page_cover: week and month HLLs where the day
    ones are gone), never above the pageviews nor the sum of the days' visitors."""
    match = page_pattern_regex(pattern).fullmatch
    final = _final(site, days)
    paths, views, visitor_days, most = set(), 0, 0, 0
    if final:
        rows = (
            PageDaily.objects.filter(site_id=site.id, date__in=final)
            .values("path")
            .annotate(views=Sum("pageviews"), people=Sum("visitors"), top=Max("visitors"))
        )
        for row in rows:
            if row["path"] != OTHER and match(row["path"]):
                paths.add(row["path"])
                views, visitor_days, most = views + row["views"], visitor_days + row["people"], max(most, row["top"])
    live = [day for day in days if day not in final]
    pipe = r.pipeline(transaction=False)
    for day in live:
        pipe.smembers(keys.pages_index(site.id, day))
    matched = [
        (day, path.decode())
        for day, found in zip(live, pipe.execute())
        for path in found
        if path.decode() != OTHER and match(path.decode())
    ]  # (not the bucket of pages past the quota)
    pipe = r.pipeline(transaction=False)
    for day, path in matched:
        pipe.get(keys.page_pageviews(site.id, day, path))
    live_views = sum(int(v or 0) for v in pipe.execute())
    views += live_views
    paths.update(path for _, path in matched)
    if not paths:
        return 0, 0
    if len(paths) == 1:  # (a literal page, pinned: its bitmaps give the very number a filter on it shows)
        path = next(iter(paths))
        field = dimensions.field("page", path)
        on = {day for day, _ in matched} | set(
            PageDaily.objects.filter(site_id=site.id, date__in=final, path=path).values_list("date", flat=True)
        )
        exact = exact_visitors(r, site, days, [field], present={field: on}).get(field)
        if exact is not None:
            return exact, views
    cover = page_cover(site, days[0], days[-1])
    hlls = [key for path in sorted(paths) for key in cover(path)]
    if cover.gone and len(paths) == 1:  # (its merged HLLs expired: the page's stored rows, as top pages count it)
        path = next(iter(paths))
        counted = {path: r.pfcount(*hlls) if hlls else 0}
        union = page_unions(r, site, days[0], days[-1], cover, [path], counted)[path]
        return max(min(union, views, visitor_days + live_views), most), views
    if not hlls:
        return most, views
    with scratch(r, site.id) as tmp:
        into = tmp.key("goal")
        pipe = r.pipeline(transaction=False)
        for i in range(0, len(hlls), UNION_CHUNK):  # (PFMERGE keeps what the destination holds)
            pipe.pfmerge(into, *hlls[i : i + UNION_CHUNK])
        pipe.pfcount(into)
        union = pipe.execute()[-1]
    return max(min(union, views, visitor_days + live_views), most), views


def revenue(r: redis.Redis, site: SiteInfo, days: list[date], event: str) -> dict[str, float]:
    """{currency: amount} the event's revenue over the days."""
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.hgetall(keys.revenue(site.id, day))
    totals: dict[str, int] = {}
    prefix = event + SEP
    for sums in pipe.execute():
        for field, hundredths in sums.items():
            field = field.decode()
            if field.startswith(prefix):
                currency = field[len(prefix) :]
                totals[currency] = totals.get(currency, 0) + int(hundredths)
    return {currency: hundredths / 100 for currency, hundredths in sorted(totals.items())}


def event_properties(
    r: redis.Redis, site: SiteInfo, start: date, end: date, event: str, top: int = 5, most: int = 10
) -> dict[str, list[dict]]:
    """{property: its top rows} for the `most` custom properties the event was sent with
    most often in the range (a page lists a goal's few properties, not every random name
    it was sent: the rest are a breakdown's, paged): the rolled-up days' from their stored
    rows (a day's index of property values in Redis expires with the day's keys), the
    others' from Redis."""
    rows = _property_rows(r, site, days_between(start, end), event)
    kept = sorted(rows, key=lambda prop: (-sum(row["events"] for row in rows[prop]), prop))[:most]
    return {prop: rows[prop][:top] for prop in sorted(kept)}


def properties(
    r: redis.Redis,
    site: SiteInfo,
    start: date,
    end: date,
    prop: str,
    event: str | None = None,
    limit: int = 10,
    page: int = 1,
    search: str = "",
) -> tuple[list[dict], int]:
    """Rows {prop: value, "visitors", "events"} of a custom property over the range (of one
    event, or of all), most visitors first, and how many values there are (with `search`,
    only the values containing it, case-insensitive: counted before paging). Values past the
    day's quota of values of the property are counted together in its row "(other)"
    (days stored before the quota was per property kept one "(other)" for all properties,
    which belongs to no one property and is left out)."""
    rows = _property_rows(r, site, days_between(start, end), event, prop, search).get(prop, [])
    return rows[(page - 1) * limit : page * limit], len(rows)


def every_property(r: redis.Redis, site: SiteInfo, start: date, end: date, limit: int) -> dict[str, list[dict]]:
    """{property: its first `limit` rows, as properties() gives them} for every custom
    property of any event in the range, by name: the exports' tables. One pass over the
    days, where a properties() call per name would read every day's index again each time."""
    rows = _property_rows(r, site, days_between(start, end))
    return {prop: rows[prop][:limit] for prop in sorted(rows)}


def property_names(r: redis.Redis, site: SiteInfo, start: date, end: date, limit: int = 50) -> list[str]:
    """The custom properties sent in the range, by name (the first `limit`): what the
    filter menu offers. Names only: the days' indexes and the stored rows' distinct names,
    no counting."""
    days = days_between(start, end)
    final = _final(site, days)
    names = set(
        EventDaily.objects.filter(site_id=site.id, date__in=final)
        .exclude(property="")
        .values_list("property", flat=True)
        .distinct()
    )
    pipe = r.pipeline(transaction=False)
    live = [day for day in days if day not in final]
    for day in live:
        pipe.smembers(keys.props_index(site.id, day))
    for members in pipe.execute() if live else ():
        for raw in members:
            parts = raw.decode().split(SEP, 2)
            if len(parts) == 3:
                names.add(parts[1])
    names.discard(OTHER)
    return sorted(names)[:limit]


def _property_rows(
    r: redis.Redis,
    site: SiteInfo,
    days: list[date],
    event: str | None = None,
    prop: str | None = None,
    search: str = "",
) -> dict[str, list[dict]]:
    """{property: rows, most visitors first} of one property (or of all), of one event (or
    of all), of the values containing `search` (case-insensitive): a value's visitors the
    union of its days' HLLs, never below the largest stored day's nor above its events."""
    final = _final(site, days)
    groups, stored = _property_groups(r, site, days, final, event, prop)
    needle = search.lower()
    pairs = sorted(pair for pair in groups if needle in pair[1].lower())
    pipe = r.pipeline(transaction=False)
    for pair in pairs:
        pipe.pfcount(*(keys.prop_visitors(site.id, day, group) for day, group in groups[pair]))
        for day, group in groups[pair]:
            if day not in final:
                pipe.get(keys.prop_count(site.id, day, group))
    answers = iter(pipe.execute())
    rows: dict[str, list[dict]] = {}
    for key, value in pairs:
        union = next(answers)
        events, most = stored.get((key, value), (0, 0))
        events += sum(int(next(answers) or 0) for day, _ in groups[(key, value)] if day not in final)
        rows.setdefault(key, []).append({key: value, "visitors": min(max(union, most), events), "events": events})
    for key, found in rows.items():
        found.sort(key=lambda row: (-row["visitors"], -row["events"], row[key]))
    return rows


def _property_groups(
    r: redis.Redis, site: SiteInfo, days: list[date], final: set[date], event: str | None, prop: str | None
) -> tuple[dict[tuple[str, str], list], dict[tuple[str, str], list[int]]]:
    """Where each (property, value) was counted: {pair: [(day, group)]}, the groups whose
    HLLs make its union, final days from their stored rows and the others from the days'
    index; and {pair: [events, largest day's visitors]} of the final days."""
    groups: dict[tuple[str, str], list] = {}
    stored: dict[tuple[str, str], list[int]] = {}
    query = EventDaily.objects.filter(site_id=site.id, date__in=final).exclude(property="")
    if prop is not None:
        query = query.filter(property=prop)
    if event is not None:
        query = query.filter(name=event)
    for row in query.values("name", "property", "value", "date", "visitors", "events"):
        pair = (row["property"], row["value"])
        total = stored.setdefault(pair, [0, 0])
        total[0] += row["events"]
        total[1] = max(total[1], row["visitors"])
        groups.setdefault(pair, []).append((row["date"], f"{row['name']}{SEP}{row['property']}{SEP}{row['value']}"))
    live = [day for day in days if day not in final]
    pipe = r.pipeline(transaction=False)
    for day in live:
        pipe.smembers(keys.props_index(site.id, day))
    for day, members in zip(live, pipe.execute()):
        for raw in members:
            group = raw.decode()
            parts = group.split(SEP, 2)
            if len(parts) != 3:  # (the "(other)" of all properties, of days before the per-property quota)
                continue
            name, key, value = parts
            if (prop is None or key == prop) and (event is None or name == event):
                groups.setdefault((key, value), []).append((day, group))
    return groups, stored
