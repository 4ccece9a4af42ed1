"""Segments: the visitors that match filters ("source is Google; country is not DE"), day
by day, as bitmaps, so every visitor number of a filtered view is a BITCOUNT.

Filters are `property op value` joined by ";" (all must hold). Properties are the visit
dimensions (source, country, browser, entry_page...), `page` (visited the page that day),
`goal` (converted that day: a goal's custom event, or a pageview its pattern matches;
a name that is no goal of the site is taken as a custom event's name) and `props:<name>`
(sent a custom event with that property's value that day, whatever the event). Ops: `==` (one of
the values, "|" between them), `!=` (none of them), `~` (the value contains the text,
case-insensitive). Plausible's `visit:` and `event:` prefixes are accepted and ignored.

Ingest keeps a bitmap of each value's visitors a day for the day's first values of each
dimension (lib/segments.lua: nearly always the day's top values), and for the values the
site pins (its goals and funnel steps). A day's segment is then

    AND over the filters of:  OR(bitmaps of the matching values)            (== and ~)
                              active AND NOT OR(bitmaps of the values)      (!=)

exact when every matching value of that day has its bitmap, and each bitmap holds all of
its value's visitors that day (counts.dimensions.complete(): not one made after the day's first visitors,
say by a goal made at noon). `!=` is BITOP DIFF on servers
that have it (Redis 8.2+); elsewhere `active XOR (active AND values)`, which needs no
padding: BITOP NOT of a bitmap shorter than the day's active one would leave the ids past
its end unset (tests/test_segments.py shows both).

A day where some matching value has no bitmap (it came after the day's first values, or
the day's quota put it under "(other)") is *estimated*: inclusion-exclusion over the
values' HyperLogLogs, |A and B| = |A| + |B| - |A or B|, and everything computed from that
day says `"estimate": true`. Daily-salt sites give a visitor a new id every day, so their
day segments are exact and their unions over several days are estimates.
"""

from dataclasses import dataclass, field
from datetime import date
from typing import Any

import redis

from .. import dimensions
from ..counts import fold, sketches
from ..counts.dimensions import day_visitors, queue_day_visitors
from ..models import Goal, page_pattern_regex
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import SCRATCH_TTL_MS, Scratch, queue_union
from . import expired
from .estimates import estimate
from .expired import one_value
from .stored import DayTotals, day_totals, segment_size, value_rows

PROPERTIES = (*dimensions.VISIT_DIMENSIONS, "page", "goal")
CUSTOM = "props:"  # a custom property's filter: props:<name> (Plausible's event:props:<name>)
MAX_NAME_LENGTH = 300  # (ingest's longest property name)
OPS = ("==", "!=", "!~", "~")  # is, is not, does not contain, contains
OTHER = dimensions.OTHER  # the row of values past a day's quota: no filter can name them
MAX_FILTERS = 6  # (an estimate costs 2^filters HLL counts a day)
MAX_VALUES = 20
MAX_VALUE_LENGTH = 1024


@dataclass(frozen=True)
class Filter:
    prop: str
    op: str
    values: tuple[str, ...]

    @property
    def negated(self) -> bool:
        """Does it select the visitors with none of the values it names (`!=`, `!~`)?"""
        return self.op in ("!=", "!~")

    @property
    def contains(self) -> bool:
        """Are its values texts to look for in values (`~`, `!~`), not values?"""
        return self.op in ("~", "!~")

    def admits(self, value: str) -> bool:
        """Does a value of this filter's property pass it?"""
        if self.contains:
            return any(v.lower() in value.lower() for v in self.values) != self.negated
        return (value in self.values) != self.negated

    def __str__(self):
        return f"{self.prop}{self.op}{'|'.join(escape(v) for v in self.values)}"


def escape(value: str) -> str:
    """A value as filters text holds it: "\\", ";" and "|" behind a backslash."""
    return value.replace("\\", "\\\\").replace(";", "\\;").replace("|", "\\|")


def _split(text: str, sep: str, unescape: bool) -> list[str]:
    """Split on `sep` where no backslash escapes it."""
    parts, current, chars = [], [], iter(text)
    for c in chars:
        if c == "\\":
            following = next(chars, None)
            if following is None:
                raise ValueError(f"{text[-60:]!r}: ends with a lone backslash (write \\\\ for a backslash)")
            current.append(following if unescape else c + following)
        elif c == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
    parts.append("".join(current))
    return parts


def unprefixed(prop: str) -> str:
    """A property by Tally's name: Plausible names them `visit:source`, `event:page`,
    `event:goal`, and its clients send those to filters and breakdowns alike."""
    return prop.removeprefix("visit:").removeprefix("event:")


def parse(text: str) -> tuple[Filter, ...]:
    """`source==Google;country!=DE|FR;page~blog` as Filters; ValueError says what is wrong.
    A value holding ";", "|" or "\\" has it escaped by a backslash (escape())."""
    found = []
    for part in _split(text or "", ";", unescape=False):
        if not part.strip():
            continue
        at = [(part.find(op), op) for op in OPS if op in part]
        if not at:
            raise ValueError(
                f"{part[:60]!r}: expected property==value, property!=value, property~text or property!~text"
            )
        where, op = min(at)
        prop = unprefixed(part[:where].strip())
        if prop.startswith(CUSTOM):
            if not prop[len(CUSTOM) :] or len(prop) > len(CUSTOM) + MAX_NAME_LENGTH:
                raise ValueError(f"{prop[:60]!r}: name a custom property, props:<name>")
        elif prop not in PROPERTIES:
            raise ValueError(
                f"{prop[:60]!r}: unknown property; choose from {', '.join(PROPERTIES)},"
                " or props:<name> for a custom property"
            )
        if prop == "goal" and op in ("~", "!~"):
            raise ValueError(f"goal{op}: goals are matched by name (== or !=)")
        values = tuple(
            dict.fromkeys(v.strip() for v in _split(part[where + len(op) :], "|", unescape=True))
        )  # (a value given twice counts once)
        if not all(values):
            raise ValueError(f"{prop}{op}: a value is empty")
        if len(values) > MAX_VALUES or any(len(v) > MAX_VALUE_LENGTH for v in values):
            raise ValueError(f"{prop}{op}: at most {MAX_VALUES} values of {MAX_VALUE_LENGTH} characters")
        found.append(Filter(prop, op, values))
    found = list(dict.fromkeys(found))  # (a filter given twice says it once: the segment keeps one term per filter)
    if len(found) > MAX_FILTERS:
        raise ValueError(f"at most {MAX_FILTERS} filters")
    return tuple(found)


@dataclass
class _Term:
    """One filter on one day: the fields it matches, which of them have a bitmap, and
    whether it subtracts them."""

    negate: bool
    fields: list[str]  # "<dimension>SEP<value>" (pages "page", custom events "event")
    bitmaps: list[str]  # those of them with a bitmap that day
    complete: bool = True  # no "(other)" of the day may hide a matching value
    expired: bool = False  # a field without a bitmap whose HLL has expired with the day's keys
    stored: dict[str, int] = field(default_factory=dict)  # the stored visitors of its fields, where their keys expired


@dataclass
class Segment:
    """A filtered audience over some days: each day's bitmap key (a scratch key, or a
    value's own bitmap; a key that does not exist holds nobody), its size, and the days
    that are estimated."""

    site: SiteInfo
    filters: tuple[Filter, ...]
    tmp: Scratch
    keys: dict[date, str] = field(default_factory=dict)
    sizes: dict[date, int] = field(default_factory=dict)
    estimated: set[date] = field(default_factory=set)
    terms: dict[date, list[_Term]] = field(default_factory=dict)
    bitmapped: dict[date, set[str]] = field(default_factory=dict)  # the fields with a bitmap each day
    stored: dict[date, DayTotals] = field(default_factory=dict)  # days answered from their stored rows
    ratios: dict = field(default_factory=dict)  # repeat_ratio()'s memo, for this answer
    thawed: dict[tuple[date, str], str] = field(default_factory=dict)  # (day, field): its stored sketch's scratch key
    sketched: set[date] = field(default_factory=set)  # stored days whose every HLL needed has its sketch

    def hll(self, day: date, name: str) -> str:
        """The HLL of a field ("" the site's) on a day: its stored sketch where the day's
        keys expired (thawed), else the live key."""
        return self.thawed.get((day, name)) or sketches.hll_key(self.site.id, day, name)

    def stored_over(self, days) -> bool:
        """Does a range hold a day answered from stored rows (its keys expired)?"""
        return any(day in self.stored for day in days)

    def sketched_over(self, days) -> bool:
        """Is every day of a range answered from stored rows also one whose sketches are
        there, and the segment one union of values (so its visitors over the range are
        one PFCOUNT of sketches and live HLLs: estimate())?"""
        return one_union(self.filters) and all(d in self.sketched for d in days if d in self.stored)

    def estimate_over(self, days) -> bool:
        """Is a number over these days an estimate? (Daily-salt ids mean nothing across days.)"""
        return any(day in self.estimated for day in days) or (self.site.daily_salt and len(days) > 1)


def build(r: redis.Redis, site: SiteInfo, filters: tuple[Filter, ...], days: list[date], tmp: Scratch) -> Segment:
    """The segment on each of these days: two round trips (three with estimated days)."""
    segment = Segment(site, filters, tmp)
    days = sorted(set(days))
    if not days:
        return segment
    sid = site.id
    goal_names = [v for f in filters if f.prop == "goal" for v in f.values]
    goals = {g.name: g for g in Goal.objects.filter(site_id=sid, name__in=goal_names)} if goal_names else {}
    # 1. Which fields each filter matches each day, and which have bitmaps. A day whose
    # index has expired (pages after keep_page_days, the rest after keep_daily_days) is
    # looked up in the rows its rollup stored (analytics.queries.stored) instead.
    pipe = r.pipeline(transaction=False)
    plan = []
    for day in days:
        pipe.smembers(keys.dimension_bitmapped(sid, day))
        day_plan = []
        for f in filters:
            for dimension, names, matches in _lookups(f, goals):
                index = _index_key(sid, day, dimension)
                if matches is not None:
                    pipe.smembers(index)
                else:
                    pipe.smismember(
                        index, [*(_member(dimension, n) for n in names), _member(dimension, dimensions.OTHER)]
                    )
                day_plan.append((f, dimension, names, matches))
        plan.append(day_plan)
    answers = iter(pipe.execute())
    read = []
    for day, day_plan in zip(days, plan):
        read.append((day, {m.decode() for m in next(answers)}, [next(answers) for _ in day_plan]))
    totals = day_totals(site, days)
    gone = {  # (day, "page" | "daily") whose keys expired after the rollup stored the day's rows
        (day, kind)
        for day, t in totals.items()
        for kind, sealed, had in (("daily", t.sealed, t.dau), ("page", t.pages_sealed, t.pageviews))
        if sealed and had
    }
    rows = _stored_rows(sid, read, plan, gone)
    for (day, bitmapped, lookups), day_plan in zip(read, plan):
        if day in totals and totals[day].segments_sealed:
            bitmapped = set()  # (bitmaps made after the day's expired: they hold late events alone)
        segment.bitmapped[day] = bitmapped
        terms: dict[Filter, _Term] = {}
        for (f, dimension, names, matches), answer in zip(day_plan, lookups):
            term = terms.setdefault(f, _Term(negate=f.negated, fields=[], bitmaps=[]))
            expired = (day, "page" if dimension == "page" else "daily") in gone
            if expired:
                found, has_other = _stored_matches(rows[day, dimension], names, matches, bitmapped, dimension)
                term.stored.update({dimensions.field(dimension, v): rows[day, dimension].get(v, 0) for v in found})
            else:
                found, has_other = _index_matches(answer, names, matches, bitmapped, dimension)
            for value in found:
                name = dimensions.field(dimension, value)
                term.fields.append(name)
                if name in bitmapped:
                    term.bitmaps.append(name)
                elif expired:
                    term.expired = True  # (no bitmap, and its HLL is gone with the day's keys)
            # ("(other)" hides values the day's quota turned away: a value it names that
            # was counted is never among them, a value it names that was not may be)
            term.complete = term.complete and not (has_other and (matches is not None or len(found) < len(names)))
        segment.terms[day] = list(terms.values())
        if any(t.expired for t in segment.terms[day]) or (day, "daily") in gone:
            segment.stored[day] = totals[day]
            segment.estimated.add(day)  # (its numbers come from stored rows, whatever its terms say)
        if not all(t.complete and len(t.bitmaps) == len(t.fields) for t in terms.values()):
            segment.estimated.add(day)
    _thaw(r, segment, gone)
    # 2. Each day's bitmap, and its size; and whether each bitmap used holds all of its
    # value's visitors that day (one made after the day's first visitors, say by a goal
    # made at noon, misses the morning's: that day is estimated).
    diff = has_bitop_diff(r, sid)
    pipe = r.pipeline(transaction=False)
    checked = [
        (day, name)
        for day in days
        if day not in segment.estimated and day not in segment.stored
        for t in segment.terms[day]
        for name in t.bitmaps
    ]
    for day, name in checked:
        queue_day_visitors(pipe, sid, day, name, bitmapped=True)
    at = []
    for day in days:
        segment.keys[day] = _queue_day(pipe, sid, day, segment.terms[day], tmp, diff)
        at.append(len(pipe))
        pipe.bitcount(segment.keys[day])
    term_at = _queue_stored_terms(r, pipe, segment)
    counts = pipe.execute()
    segment.sizes = {day: int(counts[i]) for day, i in zip(days, at)}
    checks = iter(counts)  # (the checks' answers come first)
    for day, _ in checked:
        if not day_visitors(checks, bitmapped=True)[1]:
            segment.estimated.add(day)
    # 3. Estimates for the days that need them: from HLLs (a day whose keys expired: its
    # sketches), or from the stored rows of such a day where they are not all there, or
    # where the filter is one value (its row is its own number).
    sketched = [] if one_value(filters) else sorted(segment.sketched)
    for day, recorded in segment.stored.items():
        if day in sketched:
            continue
        sizes = [
            (
                t.negate,
                min(
                    recorded.dau, sum(t.stored.values()) if t.expired else sum(int(counts[i]) for i in term_at[day, n])
                ),
            )
            for n, t in enumerate(segment.terms[day])
        ]
        segment.sizes[day] = segment_size(recorded.dau, sizes)
    late = sorted((segment.estimated - set(segment.stored)) | set(sketched))
    if late:
        for day, size in zip(late, estimate(r, segment, [[day] for day in late])):
            segment.sizes[day] = size
    return segment


def _queue_stored_terms(r: redis.Redis, pipe, segment: Segment) -> dict[tuple[date, int], list[int]]:
    """On days answered from stored rows, queue the visitors of each filter whose keys are
    still there (a country's bitmaps on a day whose page keys expired): the OR of its
    bitmaps, plus its other values' HLLs. {(day, filter's index): positions of the answers}."""
    sid = segment.site.id
    at: dict[tuple[date, int], list[int]] = {}
    hlls = [
        (day, name)
        for day in segment.stored
        for t in segment.terms[day]
        if not t.expired
        for name in t.fields
        if name not in t.bitmaps
    ]
    fold.ensure_hlls(r, sid, hlls)
    for day in segment.stored:
        for n, t in enumerate(segment.terms[day]):
            if t.expired:
                continue
            at[day, n] = []
            if t.bitmaps:
                dest = segment.tmp.key(f"stored:{day}:{n}")
                queue_union(pipe, dest, [keys.dimension_bitmap(sid, day, name) for name in t.bitmaps])
                at[day, n].append(len(pipe))
                pipe.bitcount(dest)
                pipe.unlink(dest)
            others = [keys.field_visitors(sid, day, name) for name in t.fields if name not in t.bitmaps]
            if others:
                at[day, n].append(len(pipe))
                pipe.pfcount(*others)
    return at


def visitors(r: redis.Redis, segment: Segment, ranges: dict) -> dict:
    """{name: the segment's visitors over its days} for named lists of days (built days):
    exact unions of the day bitmaps, or estimates (estimate_over; stable-salt ranges with
    estimated days by _scaled_unions())."""
    result: dict[Any, int | None] = {}
    exact, scaled, kept = {}, {}, {}
    for name, days in ranges.items():
        if not days:
            result[name] = 0
        elif len(days) == 1:
            result[name] = segment.sizes[days[0]]
        elif segment.stored_over(days):
            if segment.sketched_over(days) and not expired.one_page(segment.filters):
                result[name] = None  # (a union of the values' sketches and HLLs over the days: estimate() below)
            else:
                kept[name] = days
        elif segment.site.daily_salt:
            result[name] = None
        elif segment.estimate_over(days):
            if one_union(segment.filters):
                result[name] = None  # (a union of the values' HLLs over the days: estimate() below)
            else:
                scaled[name] = days
        else:
            exact[name] = days
    if scaled:
        result.update(_scaled_unions(r, segment, scaled))
    if kept:
        result.update(expired.stored_unions(r, segment, kept, _own_ratios(r, segment, kept)))
    if exact:
        pipe = r.pipeline(transaction=False)
        at = {}
        for n, (name, days) in enumerate(exact.items()):
            dest = segment.tmp.key(f"seg-union:{n}")
            queue_union(pipe, dest, [segment.keys[day] for day in days])
            at[name] = len(pipe)
            pipe.bitcount(dest)
            pipe.unlink(dest)
        answers = pipe.execute()
        result.update({name: int(answers[i]) for name, i in at.items()})
    late = [name for name, value in result.items() if value is None]
    for name, value in zip(late, estimate(r, segment, [ranges[name] for name in late])):
        result[name] = value
    return result


def _thaw(r: redis.Redis, segment: Segment, gone: set[tuple[date, str]]):
    """Set into scratch keys the stored sketches (counts/sketches.py) of the HLLs a day
    whose keys expired would have read: the site's and every field of its filters, for
    a day whose daily keys expired; the page fields, for one whose page keys did. A stored
    day all of whose sketches are there is `sketched`."""
    wanted: dict[date, list[str]] = {}
    for day, terms in segment.terms.items():
        daily, pages = (day, "daily") in gone, (day, "page") in gone
        names = [sketches.SITE] if daily else []
        for t in terms:
            names += [n for n in t.fields if (pages if n.startswith(sketches.PAGE_PREFIX) else daily)]
        if names:
            wanted[day] = names
    if not wanted:
        return
    segment.thawed.update(
        sketches.thaw(r, segment.site.id, [(d, n) for d, ns in wanted.items() for n in ns], segment.tmp)
    )
    segment.sketched = {day for day in segment.stored if all((day, n) in segment.thawed for n in wanted.get(day, ()))}


def _own_ratios(r: redis.Redis, segment: Segment, ranges: dict) -> dict:
    """{name: the share of its filters' day visitors that are distinct people over the
    range}, for ranges of filters combined over days whose keys expired, all of whose
    sketches are there: of each filter that selects (not `!=`) alone, the union of its
    sketches over the summed days, the largest (the most selective filter's: people who
    match all come back at least that rarely). What expired.stored_unions() scales the
    days' sizes by instead of the site's own repeat ratio, which reads a narrow audience's
    people as coming back as often as everyone: measured on a year-old log, a page and a
    source combined over 30 days were 239 for 813 that way, 631 this way."""
    selecting = [f for f in segment.filters if not f.negated]
    if one_union(segment.filters) or not selecting:
        return {}
    wanted = {
        name: days
        for name, days in ranges.items()
        if len(days) > 1 and all(day in segment.sketched for day in days if day in segment.stored)
    }
    if not wanted:
        return {}
    every = sorted({day for days in wanted.values() for day in days})
    ratios: dict = {name: 0.0 for name in wanted}
    for f in selecting:
        alone = build(r, segment.site, (f,), every, segment.tmp)
        if not all(day in alone.sketched for day in every if day in alone.stored):
            return {}
        alone_unions = visitors(r, alone, wanted)
        for name, days in wanted.items():
            summed = sum(alone.sizes[day] for day in days)
            if summed:
                ratios[name] = max(ratios[name], min(1.0, alone_unions[name] / summed))
    return {name: ratio for name, ratio in ratios.items() if ratio > 0}


def one_union(filters: tuple[Filter, ...]) -> bool:
    """Is the segment one union of values' visitors (a single filter, no `!=`)? Over several
    days its visitors are then the union of those values' HLLs over the days, which is what
    estimate() counts; with more filters, estimate() intersects unions over the whole range
    and counts anyone who matched each filter on some day, not all of them on one."""
    return len(filters) == 1 and not filters[0].negated


def _scaled_unions(r: redis.Redis, segment: Segment, ranges: dict) -> dict:
    """The segment's visitors over ranges that hold estimated days (a stable-salt site).
    An estimated day's bitmap holds only the visitors of the values that have one, so an
    OR of the days would leave the others out. Two estimates err on opposite sides here:
    inclusion-exclusion over the values' HLL unions across the days (estimate()) counts
    anyone who matched each filter on some day, not all of them on one, too many; the days'
    sizes summed times the share of the site's own day visits that are distinct people
    over the same days (the segment's visitors coming back as often as everyone's) is too
    few where a visitor's values change between visits. Measured on a week of two filters
    whose values change each visit: 72 and 23 for 46. The answer is their mean, never
    below the OR of the bitmaps nor the largest day, never above the sum of the days."""
    sid, tmp = segment.site.id, segment.tmp
    every_day = sorted({day for days in ranges.values() for day in days})
    pipe = r.pipeline(transaction=False)
    for day in every_day:
        pipe.bitcount(keys.active(sid, day))
    at = {}
    for n, (name, days) in enumerate(ranges.items()):
        for what, names in (
            ("seg", [segment.keys[day] for day in days]),
            ("site", [keys.active(sid, day) for day in days]),
        ):
            dest = tmp.key(f"scaled-{what}:{n}")
            queue_union(pipe, dest, names)
            at[name, what] = len(pipe)
            pipe.bitcount(dest)
            pipe.unlink(dest)
    answers = pipe.execute()
    active = {day: int(answers[i]) for i, day in enumerate(every_day)}
    crossed = dict(zip(ranges, estimate(r, segment, list(ranges.values()))))
    result = {}
    for name, days in ranges.items():
        seen, site_union = int(answers[at[name, "seg"]]), int(answers[at[name, "site"]])
        sizes = [segment.sizes[day] for day in days]
        visits = sum(active[day] for day in days)
        scaled = sum(sizes) * (site_union / visits if visits else 1.0)
        result[name] = min(sum(sizes), max(seen, max(sizes), round((scaled + crossed[name]) / 2)))
    return result


def present(
    r: redis.Redis, site: SiteInfo, days: list[date], dimension: str, values: list[str]
) -> dict[date, set[str]]:
    """Which of these values of a dimension had visitors each day, and "(other)" if the
    day's quota hid some values there (a value absent then may be among them)."""
    if not values:
        return {day: set() for day in days}
    pipe = r.pipeline(transaction=False)
    names = [*values, dimensions.OTHER]
    for day in days:
        pipe.smismember(_index_key(site.id, day, dimension), [_member(dimension, v) for v in names])
    return {day: {v for v, found in zip(names, answer) if found} for day, answer in zip(days, pipe.execute())}


def day_members(r: redis.Redis, site: SiteInfo, days: list[date], dimension: str) -> dict[date, set[str]]:
    """Every value of a dimension that had visitors each day (and "(other)"), by name."""
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.smembers(_index_key(site.id, day, dimension))
    prefix = _member(dimension, "")
    return {
        day: {m.decode()[len(prefix) :] for m in found if m.decode().startswith(prefix)}
        for day, found in zip(days, pipe.execute())
    }


def value_fields(kind: str, value: str, bitmapped: set[str], listed: set[str]) -> tuple[list[str], bool]:
    """The fields with a bitmap that day that make a goal or funnel step: `kind` "event"
    (a name) or "page" (a path, or a pattern with `*`), `listed` the day's values of that
    kind known to have had visitors. Also whether they are all of them: a value that had
    visitors may have no bitmap (past the day's first values, and not pinned yet), or hide
    under "(other)"."""
    if kind == "event" or "*" not in value:
        name = dimensions.field(kind, value)
        if name in bitmapped:
            return [name], True
        return [], value not in listed and dimensions.OTHER not in listed
    match = page_pattern_regex(value).fullmatch
    matching = [dimensions.field("page", p) for p in listed if p != dimensions.OTHER and match(p)]
    with_bitmap = [name for name in matching if name in bitmapped]
    return with_bitmap, len(with_bitmap) == len(matching) and dimensions.OTHER not in listed


def queue_and(pipe, segment: Segment, day: date, key: str, name: str) -> str:
    """Queue BITOP AND of the segment's day and `key` into a scratch key; returns its name."""
    dest = segment.tmp.key(name)
    pipe.bitop("AND", dest, segment.keys[day], key)
    pipe.pexpire(dest, SCRATCH_TTL_MS)
    return dest


_diff_support: dict[int, bool] = {}


def has_bitop_diff(r: redis.Redis, site_id: int) -> bool:
    """Does the server have BITOP DIFF (Redis 8.2+)? Asked once per client."""
    known = _diff_support.get(id(r))
    if known is None:
        probe = keys.temporary(site_id, "probe", "diff")
        try:
            r.execute_command("BITOP", "DIFF", probe, probe, probe)
            known = True
        except redis.exceptions.ResponseError:
            known = False
        _diff_support[id(r)] = known
    return known


def _queue_day(pipe, sid: int, day: date, terms: list[_Term], tmp: Scratch, diff: bool) -> str:
    """Queue the BITOPs of a day's segment; returns the key that will hold it."""
    dest = tmp.key(f"seg:{day.isoformat()}")
    positive = [[keys.dimension_bitmap(sid, day, name) for name in t.bitmaps] for t in terms if not t.negate]
    negative = [keys.dimension_bitmap(sid, day, name) for t in terms if t.negate for name in t.bitmaps]
    if any(not group for group in positive):
        return dest  # a filter nobody matched that day: the key stays empty
    sources = []
    for n, group in enumerate(positive):
        if len(group) == 1:
            sources.append(group[0])
        else:
            sources.append(tmp.key(f"seg:{day.isoformat()}:{n}"))
            queue_union(pipe, sources[-1], group)
    if len(sources) == 1 and not negative:
        return sources[0]
    base = keys.active(sid, day)
    if sources:
        pipe.bitop("AND", dest, *sources)
        base = dest
    if negative:
        if diff:
            pipe.bitop("DIFF", dest, base, *negative)
        else:  # base - values = base XOR (base AND values): no NOT, so no padding
            values = tmp.key(f"seg:{day.isoformat()}:not")
            queue_union(pipe, values, negative)
            pipe.bitop("AND", values, base, values)
            pipe.bitop("XOR", dest, base, values)
    elif base != dest:
        pipe.bitop("OR", dest, base)
    pipe.pexpire(dest, SCRATCH_TTL_MS)
    return dest


def _lookups(f: Filter, goals: dict):
    """(dimension, names, matches) to look a filter up by: names to check in the day's
    index, or (`matches` not None) a test of every value the index holds."""
    if f.prop == "goal":
        events = []
        for value in f.values:
            goal = goals.get(value)
            if goal is not None and goal.page_pattern:
                yield "page", (), page_pattern_regex(goal.page_pattern).fullmatch
            else:
                events.append(goal.event_name if goal is not None else value)
        if events:
            yield "event", events, None
    elif f.prop.startswith(CUSTOM):
        yield "prop", (), _PropertyMatch(f.prop[len(CUSTOM) :], f)
    elif f.contains:  # (`!~`: the values containing a text, the term negated)
        needles = [v.lower() for v in f.values]
        yield f.prop, (), lambda value: any(n in value.lower() for n in needles)
    else:
        yield f.prop, list(f.values), None


class _PropertyMatch:
    """A custom property filter's test of the day's property groups ("event SEP property
    SEP value"): the groups of its property whose value passes (the term ORs them: the
    visitors who sent the value with any event), and the groups that may hide such a
    value (the property's "(other)", and an event's "(other)" property)."""

    def __init__(self, name: str, f: Filter):
        self.name = name
        self.test = Filter(f.prop, "~" if f.contains else "==", f.values).admits

    def __call__(self, group: str) -> bool:
        event, _, rest = group.partition(dimensions.SEP)
        name, _, value = rest.partition(dimensions.SEP)
        return name == self.name and value != dimensions.OTHER and self.test(value)

    def hides(self, groups) -> bool:
        for group in groups:
            _, name, value = (group.split(dimensions.SEP, 2) + ["", ""])[:3]
            if name == dimensions.OTHER or (name == self.name and value == dimensions.OTHER):
                return True
        return False


def _hidden(values: set[str], matches) -> bool:
    """May the day's quota hide a matching value ("(other)" among the values)?"""
    if isinstance(matches, _PropertyMatch):
        return matches.hides(values)
    return dimensions.OTHER in values


def _index_matches(answer, names, matches, bitmapped: set[str], dimension: str) -> tuple[list[str], bool]:
    """The values a lookup found in the day's index (and those with a bitmap, which may
    outlive it), and whether the index holds "(other)"."""
    own = dimensions.field(dimension, "")
    if matches is not None:
        prefix = _member(dimension, "")
        values = {m.decode()[len(prefix) :] for m in answer if m.decode().startswith(prefix)}
        values.update(name[len(own) :] for name in bitmapped if name.startswith(own))
        return sorted(v for v in values if v != dimensions.OTHER and matches(v)), _hidden(values, matches)
    found = [n for n, present in zip(names, answer) if present or dimensions.field(dimension, n) in bitmapped]
    return found, bool(answer[-1])


def _stored_matches(
    rows: dict[str, int], names, matches, bitmapped: set[str], dimension: str
) -> tuple[list[str], bool]:
    """_index_matches() for a day whose index expired: the values its rollup stored rows of."""
    own = dimensions.field(dimension, "")
    values = set(rows) | {name[len(own) :] for name in bitmapped if name.startswith(own)}
    if matches is not None:
        return sorted(v for v in values if v != dimensions.OTHER and matches(v)), _hidden(values, matches)
    return [n for n in names if n in values], dimensions.OTHER in values


def _stored_rows(sid: int, read: list, plan: list, gone: set) -> dict[tuple[date, str], dict[str, int]]:
    """{(day, dimension): {value: stored visitors}} for each dimension a filter looks up on
    a day whose index expired: the names it asks for, or every value where it matches."""
    wanted: dict[str, tuple[set[date], set[str] | None]] = {}
    for (day, *_), day_plan in zip(read, plan):
        for _, dimension, names, matches in day_plan:
            if (day, "page" if dimension == "page" else "daily") in gone:
                days, named = wanted.setdefault(dimension, (set(), set()))
                days.add(day)
                if matches is not None or named is None:
                    wanted[dimension] = (days, None)
                else:
                    named.update(names)
    rows = {}
    for dimension, (days, names) in wanted.items():
        for day, values in value_rows(sid, sorted(days), dimension, None if names is None else sorted(names)).items():
            rows[day, dimension] = values
    return rows


def _index_key(sid: int, day: date, dimension: str) -> str:
    if dimension == "page":
        return keys.pages_index(sid, day)
    if dimension == "event":
        return keys.events_index(sid, day)
    if dimension == "prop":
        return keys.props_index(sid, day)
    return keys.dimension_fields(sid, day)


def _member(dimension: str, value: str) -> str:
    """How a value is named in its day index (pages, events and property groups by name alone)."""
    return value if dimension in ("page", "event", "prop") else dimensions.field(dimension, value)
