"""Visitors right now: distinct visitors over the last five UTC minutes; and the realtime
view's last 30 minutes (realtime_view()), for everyone or for the visitors its filters
select (from the open visits: their visit fields and the page each is on)."""

import struct
from datetime import datetime, timedelta

import redis

from ..dimensions import FIELD_SEP, SEP, VISIT_DIMENSIONS, VISIT_TIMEOUT
from ..sites import SiteInfo
from ..store import keys

REALTIME_MINUTES = 5


def realtime_keys(site: SiteInfo, now: datetime) -> list[str]:
    """The minute HLLs of the last five UTC minutes, this one included."""
    minute = now.replace(second=0, microsecond=0)
    return [keys.realtime(site.id, minute - timedelta(minutes=n)) for n in range(REALTIME_MINUTES)]


def realtime_visitors(r: redis.Redis, site: SiteInfo, now: datetime) -> int:
    """Distinct visitors over the last five minutes: one PFCOUNT over their minute HLLs."""
    return r.pfcount(*realtime_keys(site, now))


# The realtime view (the dashboard's "Realtime" period): the last 30 minutes.
VIEW_MINUTES = 30
VIEW_ROWS = 10
# An open visit's state as lib/visits.lua packs it (STATE, and STATE_V0 before the version
# byte): version, start, last (unix s), pageviews, bounce, start day, day last counted,
# dense id + 1; then the page it is on, FIELD_SEP, its parts' ids (comma-separated).
_STATE = struct.Struct(">BIIHB10s10sI")
_STATE_V0 = struct.Struct(">IIHB10s10s")
_STATE_VERSION = 2
_PANELS = ("page", "source", "country", "device")


def open_visits(r: redis.Redis, site: SiteInfo, now: datetime, minutes: int = VIEW_MINUTES) -> list[dict]:
    """The visits with an event in the last `minutes`, each {"page": the page it is on,
    and its visit fields (source, country, device...)}: read from the open visits ingest
    keeps (lib/visits.lua), the half hour's and the one before, one per visitor."""
    generation = int(now.timestamp()) // VISIT_TIMEOUT
    pipe = r.pipeline(transaction=False)
    for g in (generation - 1, generation):
        pipe.hgetall(keys.sessions(site.id, g))
    for g in (generation - 1, generation):
        pipe.hgetall(keys.session_parts(site.id, g))
    before, current, parts_before, parts_now = pipe.execute()
    states = {**before, **current}  # (a visit carried into this half hour: its newer state)
    parts = {**parts_before, **parts_now}
    since = now.timestamp() - minutes * 60
    visits = []
    for raw in states.values():
        found = _parse(raw)
        if found is None or found[0] < since:
            continue
        last, page, ids = found
        visit = {"page": page, "last": last}
        for part in ids.split(b","):
            for field in parts.get(part, b"").split(FIELD_SEP.encode()):
                dimension, _, value = field.decode("utf-8", "replace").partition(SEP)
                if value:
                    visit[dimension] = value
        visits.append(visit)
    return visits


def _parse(raw: bytes) -> tuple[int, str, bytes] | None:
    """(last event's unix time, the page the visit is on, its parts' ids) of a state."""
    try:
        if raw[0] <= _STATE_VERSION:
            last, at = _STATE.unpack_from(raw)[2], _STATE.size
        else:
            last, at = _STATE_V0.unpack_from(raw)[1], _STATE_V0.size
    except struct.error:
        return None
    page, _, rest = raw[at:].partition(FIELD_SEP.encode())
    ids = rest.partition(FIELD_SEP.encode())[0]
    return last, page.decode("utf-8", "replace"), ids


# What an open visit can be filtered by: its visit fields, and the page it is on. Goals and
# custom properties are not in its state (a filter on them cannot be answered here).
FILTERABLE = (*VISIT_DIMENSIONS, "page")


def unfilterable(filters) -> list[str]:
    """The filters the realtime view cannot apply (goals, custom properties)."""
    return [str(f) for f in filters if f.prop not in FILTERABLE]


def filtered_visits(visits: list[dict], filters) -> list[dict]:
    """The open visits that pass every filter (a field a visit lacks is empty: `==` fails
    on it, `!=` passes)."""
    return [v for v in visits if all(f.admits(v.get(f.prop, "")) for f in filters)]


def realtime_now(r: redis.Redis, site: SiteInfo, now: datetime, filters=()) -> int | None:
    """The live counter: everyone's from the minute HLLs; under filters, the open visits
    that pass them with an event in the last five minutes (None where a filter cannot be
    applied: a number for everyone would say more than the filters allow)."""
    if not filters:
        return realtime_visitors(r, site, now)
    if unfilterable(filters):
        return None
    return len(filtered_visits(open_visits(r, site, now, REALTIME_MINUTES), filters))


def realtime_view(r: redis.Redis, site: SiteInfo, now: datetime, filters=()) -> dict:
    """The realtime view: visitors of the last 30 minutes (the open visits with an event
    in them), those of the last five (as the live counter), visitors by the minute for as
    many of the 30 minutes as the site keeps its minute HLLs (keep_realtime_minutes), and
    the top pages (the page each visitor is on), sources, countries and devices of the
    30 minutes' visitors. Under filters, the visits that pass them, the last five minutes'
    from their last events, and no minutes (the minute HLLs count everyone); a filter it
    cannot apply (a goal, a custom property) leaves every number out, named in
    `unfiltered`."""
    refused = unfilterable(filters)
    if refused:
        return {"visitors": None, "now": None, "minutes": [], "kept_minutes": 0, "panels": {}, "unfiltered": refused}
    visits = filtered_visits(open_visits(r, site, now), filters)
    minute = now.replace(second=0, microsecond=0)
    kept = 0 if filters else min(VIEW_MINUTES, site.realtime_ttl // 60)
    moments = [minute - timedelta(minutes=n) for n in range(VIEW_MINUTES - 1, -1, -1)]
    pipe = r.pipeline(transaction=False)
    for moment in moments[-kept:]:
        pipe.pfcount(keys.realtime(site.id, moment))
    counted = pipe.execute() if kept else []
    by_minute = [None] * (VIEW_MINUTES - kept) + [int(n) for n in counted]
    panels = {}
    for dimension in _PANELS:
        tally: dict[str, int] = {}
        for visit in visits:
            if dimension in visit:
                tally[visit[dimension]] = tally.get(visit[dimension], 0) + 1
        panels[dimension] = [
            {dimension: value, "visitors": n}
            for value, n in sorted(tally.items(), key=lambda item: (-item[1], item[0]))[:VIEW_ROWS]
        ]
    recent = now.timestamp() - REALTIME_MINUTES * 60
    return {
        "visitors": len(visits),
        "now": sum(1 for v in visits if v["last"] >= recent) if filters else realtime_visitors(r, site, now),
        "minutes": [
            {"minute": moment.astimezone(site.tz).strftime("%H:%M"), "visitors": n}
            for moment, n in zip(moments, by_minute)
        ],
        "kept_minutes": kept,
        "panels": panels,
        "unfiltered": [],
    }
