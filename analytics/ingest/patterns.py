"""Patterns: a visitor past a rate no person reaches is a bot, whatever their User-Agent
says and wherever they come from.

A visitor with more than the site's `pattern_pageviews` pageviews (300 by default) in one
10-minute window is flagged for the rest of the site's day: the pageviews past the
threshold and every later event of theirs that day are dropped, counted as dropped for
"pattern" (analytics/dropped.py). A person reading fast opens a page every few seconds;
300 in 10 minutes is one every two seconds without a pause, which is a script's pace.

How: one small script call per (day, window) of the batch, all in one round trip before
the batch is counted (store/scripts/screen_visitors.lua counts each visitor's pageviews in
the window's hash and flags them in the day's set in the same step). Only sites with a
threshold pay it. The windows are fixed, so a burst that straddles two windows can reach
nearly twice the threshold before it is flagged.

What it is not: exactly once. The pageviews of a call that is retried (Redis answered
too late, a drainer died) are counted again, so after an outage a visitor may be flagged
a little early; it never counts an event twice, which the record call's marks decide.
When Redis cannot answer, the outage goes up to record()'s caller, which spools the batch
as it would for the record call itself; the replay screens it.
"""

from datetime import UTC, datetime

import redis

from ..dimensions import PAGEVIEW
from ..dropped import PATTERN
from ..sites import SiteInfo
from ..store import keys
from ..store.scripts import SCREEN_VISITORS
from . import identity

WINDOW = 600  # seconds: the rate's window
WINDOW_TTL = 2 * WINDOW  # a window's counts outlive it by one window (late events of a batch)
FLAG_TTL = 2 * 86400  # a day's flags outlive the day in every time zone
VISITOR_BYTES = 8  # of the digest: enough to tell a day's visitors apart, half the memory


def screen(r: redis.Redis, site: SiteInfo, hits: list, now: datetime | None = None) -> list:
    """The hits, with those of visitors past the site's rate dropped (bot=PATTERN). Hits
    it looked at come back with their digests worked out (Hit.digests), which record()
    then uses instead of hashing again."""
    if not site.pattern_pageviews or not hits:
        return hits
    now = now or datetime.now(UTC)
    hits = list(hits)
    groups: dict[tuple, dict[bytes, list[int]]] = {}  # (window, day) -> visitor -> positions
    day_keys: dict = {}
    for i, hit in enumerate(hits):
        if hit.bot:
            continue
        ts = hit.ts or now
        local = ts.astimezone(site.tz)
        day = local.date()
        if hit.digests is None:
            key = day_keys.get(day)
            if key is None:
                key = day_keys[day] = identity.day_key(site.salt, day) if site.daily_salt else site.salt
            digests = (identity.digest(key, hit.identity), identity.previous_digest(site, hit.identity, local))
            hit = hits[i] = type(hit)(*hit[:-1], digests)  # (Hit.digests is the last field; _replace costs 3x)
        window = int(ts.timestamp()) // WINDOW
        groups.setdefault((window, day), {}).setdefault(hit.digests[0][:VISITOR_BYTES], []).append(i)
    if not groups:
        return hits
    order = sorted(groups)  # (in time order: a visitor flagged in one window is seen flagged in the next)
    answers = _ask(r, site, [(window, day, groups[(window, day)], hits) for window, day in order])
    for (window, day), answer in zip(order, answers):
        for (_, positions), past in zip(groups[(window, day)].items(), answer):
            if past:
                _drop(hits, positions, past, now)
    return hits


def _ask(r: redis.Redis, site: SiteInfo, groups: list) -> list:
    """One script call per group, all in one round trip (Script.run_many: a server that
    lost the script reruns only those calls; a full server is an outage, as for record())."""
    calls = []
    for window, day, visitors, hits in groups:
        args: list = [site.pattern_pageviews, WINDOW_TTL, FLAG_TTL]
        for visitor, positions in visitors.items():
            args += (visitor, sum(1 for i in positions if hits[i].name == PAGEVIEW))
        calls.append(([keys.pattern_flagged(site.id, day), keys.pattern_window(site.id, window)], args))
    return SCREEN_VISITORS.run_many(r, calls)


def _drop(hits: list, positions: list[int], past: int, now: datetime):
    """Drop a visitor's events of a window: all of them (past == -1: flagged before), or
    from the pageview that passed the threshold on (the last `past` pageviews)."""
    positions = sorted(positions, key=lambda i: hits[i].ts or now)
    if past > 0:
        views = [i for i in positions if hits[i].name == PAGEVIEW]
        first = views[len(views) - past]
        positions = positions[positions.index(first) :]
    for i in positions:
        hits[i] = hits[i]._replace(bot=PATTERN, attrs="")
