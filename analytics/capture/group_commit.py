"""Group commit: single events that arrive together share one Redis call.

A browser sends one event per request. Alone, each request pays a round trip and a
record_batch call's fixed costs (some forty keys named, the script started); under load
many requests wait at the same moment. The event front (analytics/api/event_front.py)
hands each checked event to `GroupCommit.submit()` and awaits it. Events that arrive
while a write is in flight go together in the next write: one pipeline, one script call
per site. Nothing waits for a timer: an idle server writes each event at once, a busy one
writes bigger groups, as fast as Redis answers (the database world's group commit).

A group's write is a push into each site's inbox (capture/inbox.py): the events are in
Redis, atomically with their rate limits, and a drainer counts them in big batches a few
milliseconds later (counting one event alone costs Redis ~10x its share of a batch).
With INGEST_INBOX off, the group is counted at once, with record() (the older path).

Durability is unchanged: a request is answered only after its group's write returned,
or after the group went to the spool because Redis was unreachable or timed out (then
the whole group is spooled under its mark, and a replay counts what Redis had not
applied, once). Rate limits stay per event: a group's buckets are charged together, and
if one refuses, that site's events of the group are written one by one, each charged
alone, exactly as without grouping.
"""

import asyncio
import dataclasses
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import NamedTuple

import redis
from django.conf import settings

from ..ingest import patterns
from ..ingest.record import Hit, Mark, Prepared, execute, new_mark, prepare
from ..sites import SiteInfo
from ..store.connection import OUTAGE, get_redis, new_loop_client
from ..store.limits import Bucket, Limited, outage_seen, throttle_locally
from ..store.loop_client import LoopClient
from . import inbox, spool

MAX_GROUP = 500  # events per write: past this, the rest wait for the next one
WRITTEN, SPOOLED = "written", "spooled"


class Entry(NamedTuple):
    site: SiteInfo
    hit: Hit
    limits: list[Bucket]


class GroupCommit:
    """Collects entries from coroutines on one event loop; writes them in groups, one
    group in flight at a time. Pushes go from the loop itself, over a lean client
    (store/loop_client.py: the hand-off to a thread and redis-py cost a quarter of the
    worker's CPU a request); where that client cannot serve (a cluster), and for the older direct
    path and the rare cases (spooling, a refused group), a thread of its own does the
    write with redis-py. Either way, Redis I/O never blocks the loop."""

    def __init__(self, max_group: int = MAX_GROUP, in_loop: bool = True):
        self.max_group = max_group
        self.in_loop = in_loop  # pushes sent from the event loop (store/loop_client.py) where the server allows
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="group-commit")
        self.groups_written = 0  # (for tests and the bench: how many writes the events took)
        self.drainer = inbox.Drainer()  # counts what the writes pushed into the inboxes
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: LoopClient | None = None
        self._pending: list[tuple[Entry, asyncio.Future]] = []
        self._drain_task: asyncio.Task | None = None

    @property
    def sends_from_loop(self) -> bool:
        """Whether pushes go from the event loop (store/loop_client.py), not the thread."""
        return self._client is not None

    async def submit(self, entry: Entry) -> str:
        """Wait until the entry is written (WRITTEN) or spooled (SPOOLED). Raises Limited
        when its rate limits refuse it, StorageUnavailable when nothing could keep it."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # (a new loop, e.g. a test's asyncio.run: nothing carries over)
            self._loop, self._pending, self._drain_task = loop, [], None
            self._client = new_loop_client() if self.in_loop and settings.INGEST_INBOX else None
        future = loop.create_future()
        self._pending.append((entry, future))
        if self._drain_task is None:
            self._drain_task = loop.create_task(self._drain())
        return await future

    async def _drain(self):
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                group, self._pending = self._pending[: self.max_group], self._pending[self.max_group :]
                entries = [entry for entry, _ in group]
                refused = _refused_locally(entries)
                todo = [entry for i, entry in enumerate(entries) if i not in refused]
                try:
                    if not todo:
                        written = []
                    elif self.sends_from_loop:
                        written = await self._push_in_loop(todo)
                    else:
                        written = await loop.run_in_executor(self.executor, write_group, todo)
                    if SPOOLED in written:  # (this process's writes find Redis out, or back)
                        outage_seen(True)
                    elif WRITTEN in written:
                        outage_seen(False)
                    rest = iter(written)
                    outcomes = [refused[i] if i in refused else next(rest) for i in range(len(entries))]
                except Exception as e:  # (a bug, not an outage: every request of the group hears of it)
                    outcomes = [e] * len(group)
                self.groups_written += 1
                if settings.INGEST_INBOX and settings.INBOX_DRAINER == "thread":
                    written = [entry for (entry, _), outcome in zip(group, outcomes) if outcome == WRITTEN]
                    for indexes in _by_site(written):
                        self.drainer.wake(written[indexes[0]].site)
                for (_, future), outcome in zip(group, outcomes):
                    if future.done():  # (its client went away)
                        continue
                    if isinstance(outcome, Exception):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        finally:
            self._drain_task = None

    async def _push_in_loop(self, entries: list[Entry]) -> list:
        """write_group() into the inboxes, sent from the event loop: one push per site, in
        one write. What is rare goes to the thread as before: spooling after an outage
        (file I/O), and the events of a group a rate limit refused (each pushed alone)."""
        loop = asyncio.get_running_loop()
        now = datetime.now(UTC)
        stream = inbox.STREAM
        with stream.lock:  # (numbered here; sent below, before the next group is numbered: see inbox.Stream)
            groups, calls = _push_calls(entries, stream, now)
        try:
            answers = await inbox.push_many_in_loop(self._client, calls, [site.id for site, *_ in groups])
        except OUTAGE:
            stream.broken()  # (these pushes' answers never came: they are their stream's last)
            return await loop.run_in_executor(self.executor, _spool_groups, entries, groups, now)
        if any(isinstance(answer, Limited) for answer in answers):

            def alone():
                with stream.lock:
                    return _push_outcomes(get_redis(), entries, groups, answers, now, stream)

            return await loop.run_in_executor(self.executor, alone)
        return [WRITTEN] * len(entries)


def _refused_locally(entries: list[Entry]) -> dict[int, Limited]:
    """While Redis is out (store/limits.py outage_seen), each entry's rate limits charged
    in this process before the write: {index: Limited} of those over them."""
    refused = {}
    if outage_seen():
        for i, entry in enumerate(entries):
            try:
                throttle_locally(list(entry.limits))
            except Limited as e:
                refused[i] = e
    return refused


def write_group(entries: list[Entry], r: redis.Redis | None = None) -> list:
    """Write the entries, one script call per site, all in one round trip. Returns one
    outcome per entry: WRITTEN, SPOOLED, or the exception to raise for it."""
    r = r or get_redis()
    if settings.INGEST_INBOX:
        return _push_group(r, entries)
    now = datetime.now(UTC)
    groups: list[tuple[SiteInfo, list[int], Mark, Prepared | None]] = []  # (site, entry indexes, mark, prepared)
    for indexes in _by_site(entries):
        site = entries[indexes[0]].site
        groups.append((site, indexes, new_mark(site, now), None))
    outcomes: list = [None] * len(entries)
    try:
        for n, (site, indexes, mark, _) in enumerate(groups):
            hits = patterns.screen(r, site, [entries[i].hit for i in indexes], now)
            limits = _merged([bucket for i in indexes for bucket in entries[i].limits])
            groups[n] = (site, indexes, mark, prepare(site, hits, now=now, mark=mark, limits=limits))
        answers = execute(r, [prepared for *_, prepared in groups if prepared is not None])
    except OUTAGE:
        for site, indexes, mark, _ in groups:
            kept = _spool(site, [entries[i].hit for i in indexes], now, mark)
            for i in indexes:
                outcomes[i] = kept
        return outcomes
    for (_site, indexes, _, _), answer in zip(groups, answers):
        if isinstance(answer, Limited):  # one of the group's buckets refused: each event on its own
            for i in indexes:
                outcomes[i] = _write_alone(r, entries[i], now)
        else:
            for i in indexes:
                outcomes[i] = WRITTEN
    return outcomes


def _push_group(r: redis.Redis, entries: list[Entry]) -> list:
    """write_group() into the inboxes: one push per site, all in one round trip."""
    now = datetime.now(UTC)
    stream = inbox.STREAM
    with stream.lock:
        groups, calls = _push_calls(entries, stream, now)
        try:
            answers = inbox.push_many(r, calls, [site.id for site, *_ in groups])
        except OUTAGE:
            stream.broken()  # (these pushes' answers never came: they are their stream's last)
            return _spool_groups(entries, groups, now)
        return _push_outcomes(r, entries, groups, answers, now, stream)


def _push_calls(entries: list[Entry], stream: inbox.Stream, now: datetime) -> tuple[list, list]:
    """The push of each site's entries, marked: [(site, entry indexes, mark)], and the calls."""
    groups, calls = [], []
    for indexes in _by_site(entries):
        site = entries[indexes[0]].site
        mark = stream.mark(site)
        limits = _merged([bucket for i in indexes for bucket in entries[i].limits])
        groups.append((site, indexes, mark))
        calls.append(inbox.push_call(site, [entries[i].hit for i in indexes], now, mark, limits))
    return groups, calls


def _push_outcomes(
    r: redis.Redis, entries: list[Entry], groups: list, answers: list, now: datetime, stream: inbox.Stream
) -> list:
    """Each entry's outcome from its push's answer; a refused push's events go alone."""
    outcomes: list = [None] * len(entries)
    for (_site, indexes, _), answer in zip(groups, answers):
        for i in indexes:
            outcomes[i] = _push_alone(r, entries[i], now, stream) if isinstance(answer, Limited) else WRITTEN
    return outcomes


def _spool_groups(entries: list[Entry], groups: list, now: datetime) -> list:
    """Each group spooled under its push's mark (its answer never came)."""
    outcomes: list = [None] * len(entries)
    for site, indexes, mark in groups:
        kept = _spool(site, [entries[i].hit for i in indexes], now, mark)
        for i in indexes:
            outcomes[i] = kept
    return outcomes


def _push_alone(r: redis.Redis, entry: Entry, now: datetime, stream: inbox.Stream):
    """One event of a group a rate limit refused, pushed (or refused) on its own."""
    mark = stream.mark(entry.site)
    try:
        inbox.push(r, entry.site, [entry.hit], now=now, mark=mark, limits=entry.limits)
    except Limited as e:
        return e
    except OUTAGE:
        stream.broken()
        return _spool(entry.site, [entry.hit], now, mark)
    return WRITTEN


def _write_alone(r: redis.Redis, entry: Entry, now: datetime):
    try:
        recorded = spool.record_or_spool(r, entry.site, [entry.hit], now, new_mark(entry.site, now), entry.limits)
    except (Limited, spool.StorageUnavailable) as e:
        return e
    return SPOOLED if recorded is None else WRITTEN


def _spool(site: SiteInfo, hits: list[Hit], now: datetime, mark):
    try:
        spool.keep(site, hits, now, mark)
    except spool.StorageUnavailable as e:
        return e
    return SPOOLED


def _by_site(entries: list[Entry]) -> list[list[int]]:
    """The entries' indexes, grouped by site (in order of first appearance)."""
    by_site: dict[int, list[int]] = {}
    for i, entry in enumerate(entries):
        by_site.setdefault(entry.site.id, []).append(i)
    return list(by_site.values())


def _merged(buckets: list[Bucket]) -> list[Bucket]:
    """One bucket per key, charged what the group's events charge it together, and only
    if all of them fit (each event alone could not have gone through in debt)."""
    merged: dict[str, Bucket] = {}
    for bucket in buckets:
        known = merged.get(bucket.key)
        cost = bucket.cost if known is None else known.cost + bucket.cost
        merged[bucket.key] = dataclasses.replace(bucket, cost=cost, separate=True)
    return list(merged.values())
