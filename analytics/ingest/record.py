"""The write path: turn validated hits into Redis writes, one round trip per call.

`record()` takes hits that have already passed validation (see `schemas.py`), drops and
counts bots, hashes identities, buckets by the site's local day, and combines a whole
batch's writes per key before sending them: one PFADD with every member of a key, one
HINCRBY per page, one Lua call per day (and per 1,000 visitors) for the bitmaps. That
combining is what makes a 1,000-event batch cheap: the cost is per key, not per event.

Ingestion only writes raw counters. Nothing here reads or aggregates for a report.
"""

import hashlib
import secrets
import struct
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import NamedTuple

import redis
from django.conf import settings

from .. import dimensions, hooks
from ..dropped import USER_AGENT, reason_of
from ..periods import day_number
from ..sites import SiteInfo
from ..store import keys, protocol
from ..store.limits import Bucket, Limited, throttle
from ..store.scripts import RECORD_BATCH
from . import identity, patterns, visit

PAGEVIEW = dimensions.PAGEVIEW
DAILY_ID_MAP_TTL = 2 * 86400  # daily-salt id maps are useless once their day is over
SCRIPT_CHUNK = 1000  # visitors, and pages + event names, per Lua call: Lua's unpack() is bounded
_PAGEVIEW_KIND, _INTERACTIVE_KIND, _OTHER_KIND = b"pin"  # an event's kind for lib/visits.lua (a byte)
OTHER = protocol.OTHER  # where pages and event names past a site's daily quota are counted


class Hit(NamedTuple):
    """One validated event. `ts` is aware (UTC) or None for "now"; `identity` is the
    un-hashed identity source from `identity.identity_source()`; `user` the site's own
    user id when the event had one (its pageviews mark pages seen for recommendations)."""

    ts: datetime | None
    path: str
    name: str
    identity: bytes
    bot: bool | str = False  # not counted: True (its User-Agent) or why (analytics/dropped.py)
    user: str | None = None
    attrs: str = ""  # the visit dimensions of this event: fields joined by FIELD_SEP (dimensions.py)
    interactive: bool = True  # a custom event that ends a bounce (Plausible's "interactive")
    props: tuple = ()  # ((name, value), ...): custom properties, checked (schemas.check_props)
    revenue: tuple | None = None  # (currency, amount in hundredths)
    # (digest, digest under yesterday's salt or None): the identity hashed already, for
    # events that waited in the inbox (capture/inbox.py), which never keeps `identity`
    digests: tuple | None = None


class _Counts(NamedTuple):
    accepted: int
    bots: int


class Recorded(_Counts):
    """(accepted, bots); `repeated` is true when every chunk of a marked call had been
    applied before (a retry or replay that counted nothing)."""

    repeated = False


class Mark(NamedTuple):
    """Makes a record() call count once: chunk n of the call adds f"{member}:{n}" to the set
    `key` in the same atomic step as its counts, and a chunk whose mark is there already
    changes nothing. Spooled events keep their call's mark, so replaying a call that Redis
    had applied before its answer was lost (a timeout) counts nothing twice."""

    key: str
    member: str
    ttl: int  # seconds the marks are kept: longer than any retry or spool replay waits

    def chunk(self, n: int) -> str:
        return f"{self.member}:{n}"


IDEMPOTENCY_KEY_TTL = 24 * 3600  # like Stripe's: a client retries within a day


def new_mark(site: SiteInfo, now: datetime) -> Mark:
    """A fresh mark for one request's call, kept INGEST_MARK_HOURS (in a set per UTC day,
    so old marks go away with their set)."""
    ttl = settings.INGEST_MARK_HOURS * 3600
    return Mark(keys.applied(site.id, now.astimezone(UTC).date()), secrets.token_urlsafe(9), ttl)


def client_mark(site: SiteInfo, idempotency_key: str) -> Mark:
    """The mark of a client's `Idempotency-Key`: the same key, the same mark, for a day."""
    return Mark(keys.idempotency(site.id, idempotency_digest(site, idempotency_key)), "k", IDEMPOTENCY_KEY_TTL)


def idempotency_digest(site: SiteInfo, idempotency_key: str) -> str:
    """A client's `Idempotency-Key`, hashed with the site's salt (key names never hold it)."""
    return hashlib.blake2b(idempotency_key.encode(), key=site.salt, digest_size=16).hexdigest()


class _Chunk:
    """One day's share of a batch, at most SCRIPT_CHUNK distinct visitors: one Lua call."""

    __slots__ = (
        "visitors",
        "pageviews",
        "pages",
        "events",
        "props",
        "revenue",
        "minutes",
        "hours",
        "dropped",
        "visits",
        "attrs",
        "parts",
        "previous",
    )

    def __init__(self) -> None:
        self.dropped: dict[str, int] = {}  # reason -> events not counted that day (with the day's first chunk)
        self.visitors: dict[bytes, int] = {}  # digest -> 1-based index, in arrival order
        self.pageviews = 0
        self.pages: dict[str, list] = {}  # path -> [pageviews, {visitor indexes}]
        self.events: dict[str, list] = {}  # custom event name -> [count, {visitor indexes}]
        self.props: dict[str, list] = {}  # "event\x1fproperty\x1fvalue" -> [count, {visitor indexes}]
        self.revenue: dict[str, int] = {}  # "event\x1fcurrency" -> hundredths
        self.minutes: dict[datetime, set[int]] = {}  # recent UTC minute -> {visitor indexes}
        self.hours: dict[int, list] = {}  # local hour of the day -> [pageviews, {visitor indexes}]
        self.visits: list[tuple] = []  # (unix time, visitor index, kind, path, attrs index, entry part id) per event
        self.attrs: dict[str, int] = {}  # an event's part ids, joined by "," -> 1-based index
        self.parts: dict[str, str] = {}  # part id -> part text, every part the events name
        self.previous: dict[int, bytes] = {}  # visitor index -> digest under yesterday's salt (daily salt)


def record(
    r: redis.Redis,
    site: SiteInfo,
    hits: list[Hit],
    *,
    now: datetime | None = None,
    mark: Mark | None = None,
    limits: Sequence[Bucket] = (),
) -> Recorded:
    """Count `hits` for `site` in one Redis round trip. Returns how many were counted and
    how many were dropped as bots. With a `mark`, calling again with the same hits and
    mark (a retry, a replay) changes nothing. The `limits` buckets are charged for the
    call first, all or nothing; over a limit, nothing is counted and Limited is raised.
    Visitors past the site's inhuman rate are dropped first (patterns.py)."""
    hits = patterns.screen(r, site, hits, now)
    outcome = execute(r, [prepare(site, hits, now=now, mark=mark, limits=limits)])[0]
    if isinstance(outcome, Limited):
        raise outcome
    return outcome


class Prepared(NamedTuple):
    """A record() call worked out and not yet sent: its script calls (KEYS, ARGV), the
    pages seen per user for their Bloom filters, the answer it will give, and the limits
    to charge in a round trip of their own first (when they cannot ride in its one call)."""

    site: SiteInfo
    calls: list[tuple[list, list]]
    seen_pages: dict[str, dict[str, None]]
    recorded: Recorded
    throttle_first: list[Bucket]


def prepare(
    site: SiteInfo,
    hits: list[Hit],
    *,
    now: datetime | None = None,
    mark: Mark | None = None,
    limits: Sequence[Bucket] = (),
) -> Prepared:
    """Everything record() does before Redis: hashing, grouping by day and chunk, the
    script arguments. Pure (no I/O), so a group of calls can be prepared and then sent
    together (execute())."""
    now = now or datetime.now(UTC)
    tz = site.tz
    today = now.astimezone(tz).date()
    realtime_floor = now - timedelta(seconds=site.realtime_ttl)
    now_minute = now.replace(second=0, microsecond=0)
    now_hour = now.astimezone(tz).hour

    chunks: dict[date, list[_Chunk]] = {}
    dropped: dict[date, dict[str, int]] = defaultdict(dict)
    seen_pages: dict[str, dict[str, None]] = {}  # user -> pages viewed, for their Bloom filter
    hash_keys: dict[date, bytes] = {}
    digest = identity.digest
    now_seconds = int(now.timestamp())
    now_local = now.astimezone(tz)

    # In time order: a visitor's events may fall in different chunks of a day (more than
    # SCRIPT_CHUNK visitors), and visits are decided event by event.
    times = [hit.ts or now for hit in hits]
    if any(later < earlier for earlier, later in zip(times, times[1:])):
        hits = sorted(hits, key=lambda hit: hit.ts or now)
    minute: datetime | None  # (None: too old for the realtime minutes)
    for ts, path, name, source, bot, user, attrs, interactive, props, revenue, hashed in hits:
        if ts is None:
            day, hour, minute, seconds, local = today, now_hour, now_minute, now_seconds, now_local
        else:
            local = ts.astimezone(tz)
            day, hour = local.date(), local.hour
            minute = ts.replace(second=0, microsecond=0) if ts >= realtime_floor else None
            seconds = int(ts.timestamp())
        if bot:
            why = reason_of(bot) or USER_AGENT  # (a truthy bot always has a reason)
            counts = dropped[day]
            counts[why] = counts.get(why, 0) + 1
            continue
        if hashed is None:
            key = hash_keys.get(day)
            if key is None:
                key = hash_keys[day] = identity.day_key(site.salt, day) if site.daily_salt else site.salt
            visitor = digest(key, source)
        else:
            visitor = hashed[0]

        day_chunks = chunks.get(day)
        if day_chunks is None:
            day_chunks = chunks[day] = [_Chunk()]
        chunk = day_chunks[-1]
        groups = chunk.pages if name == PAGEVIEW else chunk.events
        index = chunk.visitors.get(visitor)
        if (index is None and len(chunk.visitors) >= SCRIPT_CHUNK) or (
            len(chunk.pages) + len(chunk.events) + len(chunk.props) >= SCRIPT_CHUNK
            and ((name if name != PAGEVIEW else path) not in groups or props)
        ):
            chunk = _Chunk()
            day_chunks.append(chunk)
            groups = chunk.pages if name == PAGEVIEW else chunk.events
            index = None
        if index is None:
            index = chunk.visitors[visitor] = len(chunk.visitors) + 1
            previous = hashed[1] if hashed else identity.previous_digest(site, source, local)
            if previous is not None:
                chunk.previous[index] = previous
        if "\x1d" in path or "\x1e" in path or "\x1f" in path:
            path = path.replace("\x1d", " ").replace("\x1e", " ").replace("\x1f", " ")
        ids, parts = _part_ids(attrs)
        attrs_index = chunk.attrs.get(ids)
        if attrs_index is None:
            attrs_index = chunk.attrs[ids] = len(chunk.attrs) + 1
            chunk.parts.update(parts)
        entry_id, entry = _entry_part(path)
        chunk.parts[entry_id] = entry
        kind = _PAGEVIEW_KIND if name == PAGEVIEW else _INTERACTIVE_KIND if interactive else _OTHER_KIND
        if name == PAGEVIEW:
            if user is not None:
                seen_pages.setdefault(user, {})[path] = None
            chunk.pageviews += 1
            group = groups.get(path)
            if group is None:
                group = groups[path] = [0, set(), 0]
        else:
            group = groups.get(name)
            if group is None:
                group = groups[name] = [0, set(), len(groups) + 1]  # (its place among the chunk's event groups)
        chunk.visits.append((seconds, index, kind, path, attrs_index, entry_id, group[2]))
        group[0] += 1
        group[1].add(index)
        for prop, value in props:
            prop_key = f"{name}{dimensions.SEP}{prop}{dimensions.SEP}{value}"
            group = chunk.props.get(prop_key)
            if group is None:
                group = chunk.props[prop_key] = [0, set()]
            group[0] += 1
            group[1].add(index)
        if revenue is not None:
            revenue_key = f"{name}{dimensions.SEP}{revenue[0]}"
            chunk.revenue[revenue_key] = chunk.revenue.get(revenue_key, 0) + revenue[1]
        in_hour = chunk.hours.get(hour)
        if in_hour is None:
            in_hour = chunk.hours[hour] = [0, set()]
        in_hour[0] += name == PAGEVIEW
        in_hour[1].add(index)
        if minute is not None:
            recent = chunk.minutes.get(minute)
            if recent is None:
                recent = chunk.minutes[minute] = set()
            recent.add(index)

    for day, counts in dropped.items():  # (a day of dropped events only still needs its call)
        chunks.setdefault(day, [_Chunk()])[0].dropped = counts
    # In day order, so a visitor's "new" mark lands on the earliest day of the batch. Days
    # before yesterday may be rolled up already: the script marks them dirty.
    dirty_before = today - timedelta(days=1)
    # Rate limits ride in the script when it is the call's only write (one round trip);
    # several writes are charged first, all or nothing, before any of them.
    single = sum(map(len, chunks.values())) == 1 and not seen_pages
    calls: list[tuple[list, list]] = []
    for day in sorted(chunks):
        for n, chunk in enumerate(chunks[day]):
            chunk_mark = (mark.key, mark.chunk(len(calls)), mark.ttl) if mark else None
            dirty = day < dirty_before and n == 0
            calls.append(_script_call(site, day, chunk, dirty, day < today, chunk_mark, now, limits if single else ()))
    not_counted = sum(sum(counts.values()) for counts in dropped.values())
    recorded = Recorded(accepted=len(hits) - not_counted, bots=not_counted)
    return Prepared(site, calls, seen_pages, recorded, list(limits) if limits and not single else [])


def execute(r: redis.Redis, batch: list[Prepared]) -> list[Recorded | Limited]:
    """Send prepared calls, all of them in one round trip (plus one for any call whose
    limits are charged first). Each answer is its call's Recorded, or Limited when a rate
    limit refused it (then nothing of that call was counted)."""
    outcomes: list = [None] * len(batch)
    for i, prepared in enumerate(batch):
        if prepared.throttle_first:
            try:
                throttle(r, prepared.throttle_first)
            except Limited as e:
                outcomes[i] = e
    sent = [(i, call) for i, prepared in enumerate(batch) if outcomes[i] is None for call in prepared.calls]
    calls = [call for _, call in sent]
    seen = [
        (batch[i].site, user, pages)
        for i, prepared in enumerate(batch)
        if outcomes[i] is None
        for user, pages in prepared.seen_pages.items()
    ]
    results = []
    if len(calls) == 1 and not seen:
        results = [RECORD_BATCH.run(r, *calls[0])]  # the common case, a single call: no pipeline needed
    elif calls or seen:
        pipe = r.pipeline(transaction=False)
        for script_keys, args in calls:
            RECORD_BATCH.queue(pipe, script_keys, args)
        check_seen = hooks.registered.pages_seen(pipe, r, seen)  # (the recommendations app's Bloom adds)
        answers = pipe.execute(raise_on_error=False)
        results = RECORD_BATCH.rerun_unloaded(r, answers[: len(calls)], calls)
        check_seen(answers[len(calls) :])
    by_call: dict[int, list] = defaultdict(list)
    for (i, _), result in zip(sent, results):
        by_call[i].append(result)
    for i, prepared in enumerate(batch):
        if outcomes[i] is not None:
            continue
        answers = by_call.get(i, [])
        refused = next((answer for answer in answers if answer[0] == -2), None)
        if refused is not None:
            outcomes[i] = Limited(refused[1])
            continue
        recorded = Recorded(*prepared.recorded)
        recorded.repeated = bool(answers) and all(answer[0] == -1 for answer in answers)
        outcomes[i] = recorded
    return outcomes


def _script_call(
    site: SiteInfo,
    day: date,
    chunk: _Chunk,
    dirty: bool,
    closed: bool,
    mark: tuple | None,
    now: datetime,
    limits: Sequence[Bucket] = (),
) -> tuple[list, list]:
    """KEYS and ARGV of record_batch.lua for one chunk, section by section (the layout is
    store/protocol.py's RECORD_BATCH; the script says what each value means). `mark` is
    (set key, member, ttl) or None; `limits`, the rate-limit buckets it charges."""
    sid = site.id
    id_day = day if site.daily_salt else None
    mark_key, mark_member, mark_ttl = mark or (keys.applied(sid, day), "", 0)
    call = protocol.Call(protocol.RECORD_BATCH)
    call.section(
        "head",
        {
            "visitor_ids": keys.visitor_ids(sid, id_day),
            "visitor_id_counter": keys.visitor_id_counter(sid, id_day),
            "active": keys.active(sid, day),
            "new_visitors": keys.new_visitors(sid, day),
            "site_visitors": keys.site_visitors(sid, day),
            "pageviews": keys.pageviews(sid, day),
            "pages_index": keys.pages_index(sid, day),
            "events_index": keys.events_index(sid, day),
            "page_search": keys.page_search(sid),
            "live_tick": keys.live_tick(sid),
            "first_days": keys.first_days(sid),
            "dirty_days": keys.dirty_days(sid),
            "closed_epochs": keys.closed_epochs(sid),
            "applied": mark_key,
            "page_rank": keys.page_rank(sid),
            "latest_first_day": keys.latest_first_day(sid),
        },
        id_ttl=DAILY_ID_MAP_TTL if site.daily_salt else 0,
        track_new=0 if site.daily_salt else 1,
        mark=mark_member,
        mark_ttl=mark_ttl,
        day_number=day_number(day),  # (first days seen are stored as days since 2000-01-01)
        day=day.isoformat(),
        new_visitors_prefix=keys.new_visitors_prefix(sid),
        dirty=1 if dirty else 0,
        closed=1 if closed else 0,
        digests=b"".join(chunk.visitors),
        pageviews=chunk.pageviews,
    )
    args, script_keys = call.args, call.keys
    call.section("limits")
    for bucket in limits:
        args += bucket.args()
        script_keys.append(bucket.key)
    call.section("dropped", {"hash": keys.dropped(sid, day)})
    for reason, count in chunk.dropped.items():
        args += (reason, count)
    for section, groups, hll_key, count_key, quota in (
        ("pages", chunk.pages, keys.page_visitors, keys.page_pageviews, site.max_pages_per_day),
        ("events", chunk.events, keys.event_visitors, keys.event_count, site.max_event_names_per_day),
    ):
        others = {"other_visitors": hll_key(sid, day, OTHER), "other_count": count_key(sid, day, OTHER)}
        call.section(section, others, quota=quota)
        for name, (count, members, _) in groups.items():
            script_keys += (hll_key(sid, day, name), count_key(sid, day, name))
            args += (name, count, _indexes(members))
    call.section(
        "property_groups",
        {"index": keys.props_index(sid, day), "sizes": keys.props_sizes(sid, day)},
        value_quota=site.max_property_values,
        name_quota=site.max_property_names,
        total_quota=site.max_property_groups,
    )
    properties: dict[str, int] = {}  # "event SEP property" -> 1-based index
    for name, (count, members) in chunk.props.items():
        prop = name.rsplit(dimensions.SEP, 1)[0]
        index = properties.setdefault(prop, len(properties) + 1)
        script_keys += (keys.prop_visitors(sid, day, name), keys.prop_count(sid, day, name))
        args += (name, count, _indexes(members), index)
    for prop in list(properties):  # (each event's "(other)" property: where names past the day's cap count)
        properties.setdefault(prop.split(dimensions.SEP, 1)[0] + dimensions.SEP + OTHER, len(properties) + 1)
    if properties:  # (and the "(other)" event's: where the properties of events past the day's names quota count)
        properties.setdefault(OTHER + dimensions.SEP + OTHER, len(properties) + 1)
    call.section("properties")
    args += properties
    for prop in properties:
        other = f"{prop}{dimensions.SEP}{OTHER}"
        script_keys += (keys.prop_visitors(sid, day, other), keys.prop_count(sid, day, other))
    call.section("revenue", {"hash": keys.revenue(sid, day)})
    for key, hundredths in chunk.revenue.items():
        args += (key, hundredths)
    call.section("places", {"geo": keys.places(sid, day)})
    for city, (longitude, latitude) in _places(chunk.parts.values()).items():
        args += (longitude, latitude, city)
    call.section("minutes", ttl=site.realtime_ttl)
    for minute, members in chunk.minutes.items():
        script_keys.append(keys.realtime(sid, minute))
        args.append(_indexes(members))
    call.section("hours")
    for hour, (views, members) in chunk.hours.items():
        script_keys += (keys.hour_visitors(sid, day, hour), keys.hour_pageviews(sid, day, hour))
        args += (views, _indexes(members))
    call.section("search", cap=settings.PAGE_SEARCH_CAP, channel=keys.live_channel(sid) if chunk.minutes else "")
    _visits_sections(site, chunk, now, call)
    return call.done()


def _visits_sections(site: SiteInfo, chunk: _Chunk, now: datetime, call: protocol.Call):
    """The sections of the chunk's visits (lib/visits.lua says what they mean)."""
    sid = site.id
    generation = int(now.timestamp()) // dimensions.VISIT_TIMEOUT
    events = sorted(chunk.visits, key=_first)
    paths: dict[str, int] = {}
    path_entries: list = []
    for event in events:
        if event[3] not in paths:
            paths[event[3]] = len(paths) + 1
            path_entries += (event[3], event[5])
    call.section(
        "visits",
        {
            "sessions_now": keys.sessions(sid, generation),
            "sessions_before": keys.sessions(sid, generation - 1),
            "parts_now": keys.session_parts(sid, generation),
            "parts_before": keys.session_parts(sid, generation - 1),
        },
        session_ttl=3 * dimensions.VISIT_TIMEOUT,
        timeout=dimensions.VISIT_TIMEOUT,
        quota=site.max_property_values,
        prefix=keys.dimensions_prefix(sid),
        segment_values=site.segment_values,
        pinned=keys.pinned_fields(sid),
        events=b"".join([_EVENT.pack(e[1], e[0], e[2], e[4], paths[e[3]], e[6]) for e in events]),
    )
    args = call.args
    call.section("previous")
    for index, previous in chunk.previous.items():
        args += (index, previous)
    call.section("parts")
    for part_id, text in chunk.parts.items():
        args += (part_id, text)
    call.section("attrs")
    args += chunk.attrs
    call.section("paths")
    args += path_entries


# visitor index, unix time, kind, attributes index, path index, custom event's group index (lib/visits.lua)
_EVENT = struct.Struct(protocol.EVENT_FORMAT)


def _indexes(members) -> bytes:
    """Visitor indexes as record_batch.lua reads them: u16 big-endian, concatenated."""
    return struct.pack(f">{len(members)}H", *members)


def _first(item):
    return item[0]


CITY = f"city{dimensions.SEP}"


def _places(parts) -> dict[str, tuple[float, float]]:
    """The cities named in these visit parts that the city database placed."""
    found = {}
    for text in parts:
        if CITY in text:
            for field in text.split(dimensions.FIELD_SEP):
                if field.startswith(CITY) and (place := visit.place_of(field[len(CITY) :])) is not None:
                    found[field[len(CITY) :]] = place
    return found


@lru_cache(maxsize=16384)
def _part_ids(attrs: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """An event's visit fields (parts joined by GROUP_SEP) as its part ids joined by ","
    and the (id, text) of each part: lib/visits.lua keeps visits by part id."""
    parts = tuple((_part_id(part), part) for part in attrs.split(dimensions.GROUP_SEP) if part)
    return ",".join(part_id for part_id, _ in parts), parts


@lru_cache(maxsize=65536)
def _entry_part(path: str) -> tuple[str, str]:
    part = f"entry_page{dimensions.SEP}{path}"
    return _part_id(part), part


def _part_id(part: str) -> str:
    """A short stable name for a part (64 bits: no two parts of a site's open visits meet)."""
    return hashlib.blake2b(part.encode(), digest_size=8).hexdigest()
