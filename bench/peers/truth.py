"""The exact answer to every question the peers are asked, found the slow, obvious way: the
enriched events (enrich.py) in a list, sessions cut from them here, sets of visitors counted
in Python. It is the yardstick of the peers table's errors, so each definition is written
out below, and the ClickHouse peer's SQL (clickhouse.py) keeps every one of them. They are
Plausible's, as its query builder applies them, where Plausible has one.

A range is whole UTC days, `start` to `end` inclusive: the events with start 00:00 <= ts <
the day after `end` 00:00.

*Sessions.* A visitor's events in time order; a gap of more than 30 minutes starts a new
session (the stream never has a gap between 10 and 40 minutes, so Plausible's rule, whole
minutes <= 30, cuts the same sessions). A session keeps its first event's visit fields
(source, country, browser...: enrich.Visit); its entry page is its first pageview's path,
its exit page its last; its duration is its last event's time less its first's. It is a
*bounce* if it has one pageview and no other interactive event. A session is *in* a range
if it overlaps it (it starts before the range ends and its last event is not before the
range starts: Plausible's `timestamp >= first AND start < last`).

*Filters* are (dimension, value) pairs, all of which must hold. A visit dimension (source,
country, browser, os, device, entry_page, exit_page, utm_*, referrer, channel) holds for a
session with that value, and for an event of such a session. An event dimension holds for
an event: `page` (its path, whatever its name), `goal` (its name). Values are compared as
shown: a source or referrer of none is "Direct / None", another field without a value
"(not set)".

*The filtered events* of a range: its events that hold every event filter and whose session
holds every visit filter. *The filtered sessions*: its sessions that hold every visit filter
and, under an event filter, have at least one filtered event in the range (Plausible joins
them on session_id).

* aggregate: visitors = distinct visitors of the filtered events; visits = distinct
  sessions of the filtered events; pageviews = the filtered events named pageview;
  bounce_rate = 100 x bounces / sessions among the filtered sessions (under a page filter,
  only those that entered at that page: Plausible's rule); visit_duration = the mean
  duration of the filtered sessions, in seconds. Rates of nothing are 0.0.
* timeseries: for each day of the range, the distinct visitors of the day's filtered events.
* breakdown: the distinct visitors per value, most first, ties by value, `limit` rows.
  `page`: of the filtered pageviews, by path; `goal`: of the filtered custom events, by
  name; `prop:<name>`: of the filtered events with that property, by its value; a visit
  dimension: of the filtered sessions, by the session's value. So a visitor counts under
  every value any of their sessions (or events) had in the range.
* retention: for each day `c` of the range, the cohort of visitors first seen ever (in all
  events loaded) on `c`; its size; and for n = 0 .. end - c, how many of them had an event
  on day c + n (retained[0] is the size).
* funnel: for steps (("page", path) | ("goal", name), ...), the visitors who, within the
  range, did step 1, then step 2 strictly later, and so on: the count per step of those
  who got at least that far (ClickHouse's windowFunnel over the whole range in
  'strict_increase' mode; Plausible's funnels use a 24-hour window instead). Tally's own
  funnels are by day, every step on a day no earlier than the one before, in any order
  within a day: `funnel(..., by_day=True)` answers that.
"""

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

from analytics.dimensions import SOURCE_DIMENSIONS

from .enrich import Event

PAGEVIEW = "pageview"
TIMEOUT = 30 * 60
DIRECT = "Direct / None"
NOT_SET = "(not set)"
VISIT_DIMENSIONS = (
    *SOURCE_DIMENSIONS,
    "browser",
    "os",
    "device",
    "country",
    "entry_page",
    "exit_page",
)
EVENT_DIMENSIONS = ("page", "goal")
FUNNEL = (("page", "/"), ("page", "/pricing"), ("page", "/signup"), ("goal", "Signup"))


def shown(dimension: str, value: str) -> str:
    """A value as the breakdowns show it (and filters name it)."""
    if dimension in ("source", "referrer"):
        return value if value and value != DIRECT else DIRECT
    return value or NOT_SET


def rates(bounces: int, bounce_visits: int, duration: int, visits: int) -> tuple[float, float]:
    """(bounce rate in %, mean visit duration in s), one formula for every peer."""
    return (100 * bounces / bounce_visits if bounce_visits else 0.0, duration / visits if visits else 0.0)


def split(filters) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(visit filters, event filters)."""
    visit, event = [], []
    for dimension, value in filters:
        if dimension in VISIT_DIMENSIONS:
            visit.append((dimension, value))
        elif dimension in EVENT_DIMENSIONS:
            event.append((dimension, value))
        else:
            raise ValueError(f"no filter on {dimension!r}")
    return visit, event


def day_start(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def days(start: date, end: date) -> list[date]:
    return [start + timedelta(days=n) for n in range((end - start).days + 1)]


class Session:
    __slots__ = ("number", "user_id", "start", "end", "pageviews", "interactive", "entry_page", "exit_page", "visit")

    def __init__(self, number: int, event: Event):
        self.number, self.user_id, self.visit = number, event.user_id, event.visit
        self.start = self.end = event.ts
        self.pageviews = self.interactive = 0
        self.entry_page = self.exit_page = ""
        self.add(event)

    def add(self, event: Event):
        self.end = event.ts
        self.interactive += event.interactive
        if event.name == PAGEVIEW:
            self.pageviews += 1
            self.entry_page = self.entry_page or event.path
            self.exit_page = event.path

    @property
    def bounce(self) -> bool:
        return self.pageviews == 1 and self.interactive == 1

    def value(self, dimension: str) -> str:
        if dimension in ("entry_page", "exit_page"):
            return shown(dimension, getattr(self, dimension))
        return shown(dimension, getattr(self.visit, dimension))


class Truth:
    def __init__(self, events: Iterable[Event]):
        self.events = sorted(events, key=lambda e: e.ts)
        self.times = [e.ts for e in self.events]
        self.sessions: list[Session] = []
        self.session_of: list[Session] = []  # by event
        current: dict[int, Session] = {}
        self.first_day: dict[int, date] = {}
        self.active_days: dict[int, set[date]] = defaultdict(set)
        for e in self.events:
            s = current.get(e.user_id)
            if s is None or e.ts - s.end > TIMEOUT:
                s = current[e.user_id] = Session(len(self.sessions), e)
                self.sessions.append(s)
            else:
                s.add(e)
            self.session_of.append(s)
            day = datetime.fromtimestamp(e.ts, UTC).date()
            self.first_day.setdefault(e.user_id, day)
            self.active_days[e.user_id].add(day)

    def aggregate(self, start: date, end: date, filters=()) -> dict:
        chosen = self._events(start, end, filters)
        sessions = self._sessions(start, end, filters)
        page = next((value for dimension, value in filters if dimension == "page"), None)
        entered = [s for s in sessions if page is None or s.entry_page == page]
        bounce_rate, visit_duration = rates(
            sum(s.bounce for s in entered), len(entered), sum(s.end - s.start for s in sessions), len(sessions)
        )
        return {
            "visitors": len({self.events[i].user_id for i in chosen}),
            "visits": len({self.session_of[i].number for i in chosen}),
            "pageviews": sum(self.events[i].name == PAGEVIEW for i in chosen),
            "bounce_rate": bounce_rate,
            "visit_duration": visit_duration,
        }

    def timeseries(self, start: date, end: date, filters=()) -> list[tuple[date, int]]:
        by_day: dict[date, set[int]] = defaultdict(set)
        for i in self._events(start, end, filters):
            by_day[datetime.fromtimestamp(self.events[i].ts, UTC).date()].add(self.events[i].user_id)
        return [(day, len(by_day[day])) for day in days(start, end)]

    def breakdown(self, dimension: str, start: date, end: date, filters=(), limit: int = 10) -> list[tuple[str, int]]:
        found: dict[str, set[int]] = defaultdict(set)
        if dimension in VISIT_DIMENSIONS:
            for s in self._sessions(start, end, filters):
                found[s.value(dimension)].add(s.user_id)
        else:
            key = _event_key(dimension)
            for i in self._events(start, end, filters):
                if (value := key(self.events[i])) is not None:
                    found[value].add(self.events[i].user_id)
        return top({value: len(users) for value, users in found.items()}, limit)

    def retention(self, start: date, end: date) -> list[tuple[date, int, list[int]]]:
        cohorts: dict[date, list[int]] = defaultdict(list)
        for user, day in self.first_day.items():
            cohorts[day].append(user)
        rows = []
        for cohort in days(start, end):
            retained = [
                sum(cohort + timedelta(days=n) in self.active_days[u] for u in cohorts[cohort])
                for n in range((end - cohort).days + 1)
            ]
            rows.append((cohort, len(cohorts[cohort]), retained))
        return rows

    def funnel(self, steps, start: date, end: date, by_day: bool = False) -> list[int]:
        reached: dict[int, int] = defaultdict(int)  # visitor -> steps done
        if by_day:
            done: dict[int, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))  # visitor -> day -> steps
            for i in range(*self._span(start, end)):
                e = self.events[i]
                for k, step in enumerate(steps):
                    if _did(e, step):
                        done[e.user_id][e.ts // 86400].add(k)
            for user, by_date in done.items():
                for day in sorted(by_date):
                    while reached[user] < len(steps) and reached[user] in by_date[day]:
                        reached[user] += 1
        else:
            last: dict[int, int] = {}  # visitor -> when they did their last step
            for i in range(*self._span(start, end)):
                e = self.events[i]
                k = reached[e.user_id]
                if k < len(steps) and _did(e, steps[k]) and e.ts > last.get(e.user_id, -1):
                    reached[e.user_id], last[e.user_id] = k + 1, e.ts
        return [sum(n > k for n in reached.values()) for k in range(len(steps))]

    def _span(self, start: date, end: date) -> tuple[int, int]:
        first, last = day_start(start), day_start(end + timedelta(days=1))
        return bisect_left(self.times, first), bisect_left(self.times, last)

    def _events(self, start: date, end: date, filters) -> list[int]:
        """The filtered events of the range, as indexes."""
        visit, event = split(filters)
        lo, hi = self._span(start, end)
        return [
            i
            for i in range(lo, hi)
            if all(_holds(self.events[i], d, v) for d, v in event)
            and all(self.session_of[i].value(d) == v for d, v in visit)
        ]

    def _sessions(self, start: date, end: date, filters) -> list[Session]:
        """The filtered sessions of the range."""
        visit, event = split(filters)
        first, last = day_start(start), day_start(end + timedelta(days=1))
        joined = None
        if event:
            lo, hi = self._span(start, end)
            joined = {
                self.session_of[i].number for i in range(lo, hi) if all(_holds(self.events[i], d, v) for d, v in event)
            }
        return [
            s
            for s in self.sessions
            if s.start < last
            and s.end >= first
            and all(s.value(d) == v for d, v in visit)
            and (joined is None or s.number in joined)
        ]


def top(counts: dict[str, int], limit: int) -> list[tuple[str, int]]:
    """The rows of a breakdown: most visitors first, ties by value."""
    return sorted(counts.items(), key=lambda row: (-row[1], row[0]))[:limit]


def _holds(e: Event, dimension: str, value: str) -> bool:
    return (e.path if dimension == "page" else e.name) == value


def _did(e: Event, step: tuple[str, str]) -> bool:
    kind, value = step
    return e.name == PAGEVIEW and e.path == value if kind == "page" else e.name == value


def _event_key(dimension: str):
    if dimension == "page":
        return lambda e: e.path if e.name == PAGEVIEW else None
    if dimension == "goal":
        return lambda e: e.name if e.name != PAGEVIEW else None
    if dimension.startswith("prop:"):
        name = dimension[5:]
        return lambda e: next((v for k, v in e.props if k == name), None)
    raise ValueError(f"no breakdown by {dimension!r}")


class Question(NamedTuple):
    """One question of the dashboard, asked of any peer as getattr(peer, method)(*args, **kwargs)."""

    label: str
    method: str
    args: tuple
    kwargs: dict


def questions(end: date, span: int = 30) -> list[Question]:
    """The dashboard's questions over the `span` days ending with `end`: the cards, the
    chart, every panel, filtered with one and with two filters, retention, a funnel."""
    start = end - timedelta(days=span - 1)
    r = (start, end)
    de, google, pricing = ("country", "DE"), ("source", "Google"), ("page", "/pricing")
    return [
        Question("aggregate", "aggregate", r, {}),
        Question("timeseries by day", "timeseries", r, {}),
        Question(f"retention, {span} day cohorts", "retention", r, {}),
        Question("top pages", "breakdown", ("page", *r), {}),
        Question("entry pages", "breakdown", ("entry_page", *r), {}),
        Question("exit pages", "breakdown", ("exit_page", *r), {}),
        Question("sources", "breakdown", ("source", *r), {}),
        Question("countries", "breakdown", ("country", *r), {"limit": 100}),
        Question("browsers", "breakdown", ("browser", *r), {}),
        Question("operating systems", "breakdown", ("os", *r), {}),
        Question("devices", "breakdown", ("device", *r), {}),
        Question("goals", "breakdown", ("goal", *r), {}),
        Question("prop:plan", "breakdown", ("prop:plan", *r), {}),
        Question("country==DE: aggregate", "aggregate", r, {"filters": (de,)}),
        Question("country==DE: top pages", "breakdown", ("page", *r), {"filters": (de,)}),
        Question("page==/pricing: aggregate", "aggregate", r, {"filters": (pricing,)}),
        Question("page==/pricing: sources", "breakdown", ("source", *r), {"filters": (pricing,)}),
        Question("country==DE, source==Google: top pages", "breakdown", ("page", *r), {"filters": (de, google)}),
        Question("country==DE, page==/pricing: aggregate", "aggregate", r, {"filters": (de, pricing)}),
        Question("funnel / > /pricing > /signup > Signup", "funnel", (FUNNEL, *r), {}),
    ]
