"""The write path: turn validated hits into Redis writes, one round trip per call.

`record()` takes hits that have already passed validation (see `schemas.py`), drops and
counts bots, hashes identities, buckets by the site's local day, and combines a whole
batch's writes per key before sending them: one PFADD with every member of a key, one
HINCRBY per page, one Lua call per day (and per 1,000 visitors) for the bitmaps. That
combining is what makes a 1,000-event batch cheap: the cost is per key, not per event.

Ingestion only writes raw counters. Nothing here reads or aggregates for a report.
"""
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

import redis

from . import identity, keys
from .scripts import ASSIGN_IDS
from .sites import SiteInfo

PAGEVIEW = "pageview"
REALTIME_TTL = 2 * 3600  # per-minute realtime HLLs live two hours
REALTIME_WINDOW = timedelta(seconds=REALTIME_TTL)
DAILY_ID_MAP_TTL = 2 * 86400  # daily-salt id maps are useless once their day is over
SCRIPT_CHUNK = 1000  # visitors per Lua call: Lua's unpack() is bounded


class Hit(NamedTuple):
    """One validated event. `ts` is aware (UTC) or None for "now"; `identity` is the
    un-hashed identity source from `identity.identity_source()`."""

    ts: datetime | None
    path: str
    name: str
    identity: bytes
    bot: bool = False


class Recorded(NamedTuple):
    accepted: int
    bots: int


def record(r: redis.Redis, site: SiteInfo, hits: list[Hit], *, now: datetime | None = None) -> Recorded:
    """Count `hits` for `site` in one Redis round trip. Returns how many were counted and
    how many were dropped as bots."""
    now = now or datetime.now(UTC)
    tz = site.tz
    today = now.astimezone(tz).date()
    realtime_floor = now - REALTIME_WINDOW

    day_visitors: dict[date, dict[bytes, None]] = {}  # ordered sets, for the Lua call
    page_visitors: dict[tuple[date, str], set[bytes]] = defaultdict(set)
    event_visitors: dict[tuple[date, str], set[bytes]] = defaultdict(set)
    pageviews: dict[date, int] = defaultdict(int)
    page_pageviews: dict[tuple[date, str], int] = defaultdict(int)
    event_counts: dict[tuple[date, str], int] = defaultdict(int)
    minute_visitors: dict[datetime, set[bytes]] = defaultdict(set)
    bots: dict[date, int] = defaultdict(int)
    hash_keys: dict[date, bytes] = {}
    now_minute = now.replace(second=0, microsecond=0)
    digest = identity.digest

    for ts, path, name, source, bot in hits:
        if ts is None:
            day, minute = today, now_minute
        else:
            day = ts.astimezone(tz).date()
            minute = ts.replace(second=0, microsecond=0) if ts >= realtime_floor else None
        if bot:
            bots[day] += 1
            continue
        key = hash_keys.get(day)
        if key is None:
            key = hash_keys[day] = identity.day_key(site.salt, day) if site.daily_salt else site.salt
        visitor = digest(key, source)
        seen_today = day_visitors.get(day)
        if seen_today is None:
            seen_today = day_visitors[day] = {}
        seen_today[visitor] = None
        if name == PAGEVIEW:
            pageviews[day] += 1
            page_pageviews[day, path] += 1
            page_visitors[day, path].add(visitor)
        else:
            event_counts[day, name] += 1
            event_visitors[day, name].add(visitor)
        if minute is not None:
            minute_visitors[minute].add(visitor)

    pipe = r.pipeline(transaction=False)
    script_calls = []  # (position in the pipeline, keys, args) to retry on NOSCRIPT
    sid = site.id
    for day in sorted(day_visitors):  # in day order, so "first seen" lands on the first day
        members = list(day_visitors[day])
        if site.daily_salt:
            script_keys = [keys.visitor_ids(sid, day), keys.visitor_id_counter(sid, day), keys.active(sid, day)]
            ttl = DAILY_ID_MAP_TTL
        else:
            script_keys = [
                keys.visitor_ids(sid),
                keys.visitor_id_counter(sid),
                keys.active(sid, day),
                keys.ever_seen(sid),
                keys.new_visitors(sid, day),
            ]
            ttl = 0
        for start in range(0, len(members), SCRIPT_CHUNK):
            args = [ttl, *members[start : start + SCRIPT_CHUNK]]
            script_calls.append((len(pipe), script_keys, args))
            ASSIGN_IDS.queue(pipe, script_keys, args)
        pipe.pfadd(keys.site_visitors(sid, day), *members)
    for day, count in pageviews.items():
        pipe.incrby(keys.pageviews(sid, day), count)
    for (day, path), count in page_pageviews.items():
        pipe.hincrby(keys.page_pageviews(sid, day), path, count)
    for (day, path), members in page_visitors.items():
        pipe.pfadd(keys.page_visitors(sid, day, path), *members)
    for (day, name), count in event_counts.items():
        pipe.hincrby(keys.event_counts(sid, day), name, count)
    for (day, name), members in event_visitors.items():
        pipe.pfadd(keys.event_visitors(sid, day, name), *members)
    for minute, members in minute_visitors.items():
        key = keys.realtime(sid, minute)
        pipe.pfadd(key, *members)
        pipe.expire(key, REALTIME_TTL)
    for day, count in bots.items():
        pipe.incrby(keys.bots_dropped(sid, day), count)

    if len(pipe):
        results = pipe.execute(raise_on_error=False)
        _retry_unloaded_scripts(r, results, script_calls)
    dropped = sum(bots.values())
    return Recorded(accepted=len(hits) - dropped, bots=dropped)


def _retry_unloaded_scripts(r, results, script_calls):
    """Raise the first real error; rerun only the script calls the server did not know
    (every other command already ran, and rerunning an INCRBY would double-count)."""
    script_positions = {pos for pos, _, _ in script_calls}
    for pos, result in enumerate(results):
        if isinstance(result, Exception) and not (
            pos in script_positions and isinstance(result, redis.exceptions.NoScriptError)
        ):
            raise result
    for pos, script_keys, args in script_calls:
        if isinstance(results[pos], redis.exceptions.NoScriptError):
            ASSIGN_IDS.run(r, script_keys, args)
