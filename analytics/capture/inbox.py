"""The inbox: single events are acknowledged once they are in Redis, and counted in batches.

Why: a browser sends one event per request, and counting one event costs Redis about ten
times what it costs inside a batch (`make bench`'s script-cost table: ~310 µs alone
against ~30 µs an event in a batch of 1,000): a new visit touches a dozen visit fields,
each with its quota, packed counts, HLL and filter bitmap, and those costs are per call,
not per event. Group commit shares a call between the requests that arrive together, but
at a few connections a group is one or two events. So the event front does not count a
single event: it pushes it into the site's inbox (one small script call for the whole
group, rate limits included) and answers 202; a drainer takes up to DRAIN_BATCH events
off the inbox and counts them with the same record() call as a batch.

Exactly once: the push is atomic with its rate limits and its mark (a group whose reply
was lost goes to the spool under that mark, and its replay pushes nothing twice; marks
are numbers in a stream, one hash field per process, not a set member per push). A
drainer claims a batch in one atomic step (inbox_claim.lua moves the events into a claim
with an id and a lease), counts it with the marks `inbox-<id>:<chunk>`, and drops the
claim. A drainer that dies mid-batch leaves the claim; once its lease runs out, the next
drainer takes it over whole, and the marks skip the chunks that were counted already.

Privacy: an inbox event carries its visitor's digests (identity.py), worked out before the
push; the IP address and User-Agent never reach Redis.

Freshness: a drainer counts within DRAIN_DELAY of a push (`manage.py drain_inboxes`, the
process `make run` starts, or a thread in each web process), reads of a site count its
inbox first (flush()), and so does each rollup task, which counts what a stopped web
process left behind.
"""

import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import orjson
import redis
from django.conf import settings

from ..ingest import identity
from ..ingest.record import Hit, Mark, record
from ..sites import SiteInfo
from ..store import keys
from ..store.connection import OUTAGE, get_redis
from ..store.limits import Bucket, Limited
from ..store.scripts import INBOX_CLAIM, INBOX_PUSH, INBOX_RELEASE

log = logging.getLogger(__name__)

DRAIN_BATCH = 250  # events a drainer counts in one record() call: Redis runs nothing else meanwhile (~10 ms)
LEASE_MS = 60_000  # a claim's drainer is taken for dead after this long
DRAIN_DELAY = 0.1  # seconds a drainer lets more pushes arrive before counting (bigger batches cost less an event)
MARK_PREFIX = "inbox."  # a push's own marks (the spool replays such a call into the inbox)


class Stream:
    """This process's pushes, numbered (inbox_push.lua says why): `mark()` numbers the next
    push, `broken()` starts a new stream after a push whose answer never came. Pushes must
    reach Redis in the order of their numbers (a later number applied first makes the
    earlier one look like a repeat): group commit numbers them under `lock` and sends one
    group at a time, from its thread or from the event loop over one connection
    (group_commit.py), never both at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.broken()

    def broken(self):
        self.name, self.count = secrets.token_urlsafe(9), 0

    def mark(self, site: SiteInfo) -> Mark:
        self.count += 1
        return Mark(
            keys.inbox_streams(site.id), f"{MARK_PREFIX}{self.name}:{self.count}", settings.INGEST_MARK_HOURS * 3600
        )


STREAM = Stream()
# A forked process (a server's workers) must not go on with its parent's stream: two
# processes numbering one stream would take each other's pushes for repeats.
os.register_at_fork(after_in_child=STREAM.broken)


def is_push_mark(mark: Mark | None) -> bool:
    return mark is not None and mark.member.startswith(MARK_PREFIX)


def encode(site: SiteInfo, hit: Hit, now: datetime) -> bytes:
    """One event as the inbox keeps it: its time made explicit, its identity hashed."""
    ts = hit.ts or now
    local = ts.astimezone(site.tz)
    key = identity.day_key(site.salt, local.date()) if site.daily_salt else site.salt
    previous = identity.previous_digest(site, hit.identity, local)
    return orjson.dumps(
        [
            round(ts.timestamp() * 1_000_000),
            hit.path,
            hit.name,
            identity.digest(key, hit.identity).hex(),
            previous.hex() if previous else None,
            hit.bot,
            hit.user,
            hit.attrs,
            hit.interactive,
            hit.props,
            hit.revenue,
        ]
    )


def decode(raw: bytes) -> Hit:
    us, path, name, digest, previous, bot, user, attrs, interactive, props, revenue = orjson.loads(raw)
    return Hit(
        datetime.fromtimestamp(us / 1_000_000, UTC),
        path,
        name,
        b"",
        bot,
        user,
        attrs,
        interactive,
        tuple(tuple(p) for p in props),
        tuple(revenue) if revenue else None,
        (bytes.fromhex(digest), bytes.fromhex(previous) if previous else None),
    )


def push_call(
    site: SiteInfo, hits: list[Hit], now: datetime, mark: Mark | None, limits: Sequence[Bucket] = ()
) -> tuple[list, list]:
    """KEYS and ARGV of inbox_push.lua for these hits."""
    script_keys = [keys.inbox(site.id), mark.key if mark else keys.inbox_streams(site.id), *(b.key for b in limits)]
    args = [mark.member if mark else "", mark.ttl if mark else 0, len(limits), *(a for b in limits for a in b.args())]
    args += [encode(site, hit, now) for hit in hits]
    return script_keys, args


def push_many(r: redis.Redis, calls: list[tuple[list, list]], site_ids: list[int]) -> list[int | Limited]:
    """Run push calls (into the inboxes of `site_ids`) in one round trip, with the hint that
    they wait (keys.inbox_waiting). Each answer: the inbox's length after the push (-1 when
    its mark says it was pushed before), or Limited (nothing pushed)."""
    return _push_answers(INBOX_PUSH.run_many(r, calls, after=_hint(site_ids)))


async def push_many_in_loop(client, calls: list[tuple[list, list]], site_ids: list[int]) -> list[int | Limited]:
    """push_many() on the event loop, over a LoopClient (store/loop_client.py)."""
    return _push_answers(await INBOX_PUSH.run_in_loop(client, calls, after=_hint(site_ids)))


def _hint(site_ids: list[int]) -> tuple:
    """The SADD that names the sites to the drainer process; with drainer threads in the
    web processes (woken directly: group_commit.py) nothing reads the hint, so none is sent."""
    if not site_ids or settings.INBOX_DRAINER != "process":
        return ()
    return (("SADD", keys.inbox_waiting(), *site_ids),)


def _push_answers(replies: list) -> list[int | Limited]:
    return [Limited(answer[1]) if answer[0] == -2 else answer[0] for answer in replies]


def push(
    r: redis.Redis,
    site: SiteInfo,
    hits: list[Hit],
    *,
    now: datetime | None = None,
    mark: Mark | None = None,
    limits: Sequence[Bucket] = (),
) -> int:
    """Push hits into the site's inbox; raises Limited when a rate limit refuses them."""
    answer = push_many(r, [push_call(site, hits, now or datetime.now(UTC), mark, limits)], [site.id])[0]
    if isinstance(answer, Limited):
        raise answer
    return answer


def drain(r: redis.Redis, site: SiteInfo, *, most: int = DRAIN_BATCH, wait: float = 0.0) -> int:
    """Count the site's inbox, batch by batch, until it is empty. Returns the events
    counted. When another drainer holds the site's claim, waits up to `wait` seconds for
    it (flush() waits: a read must see every event acknowledged before it), else returns."""
    inbox = keys.inbox(site.id)
    claim, claimed, counter = keys.inbox_claim(site.id)
    deadline = time.monotonic() + wait
    counted = 0
    _give_up_again(r, site, [inbox, claim, claimed])
    while True:
        got = INBOX_CLAIM.run(r, [inbox, claim, claimed, counter], [int(time.time() * 1000), LEASE_MS, most])
        if not got:
            return counted
        if got[0] == b"busy":
            if time.monotonic() >= deadline:
                return counted
            time.sleep(0.005)
            continue
        claim_id = got[0].decode()
        hits = [decode(raw) for raw in got[1:]]
        mark = Mark(keys.inbox_marks(site.id), f"inbox-{claim_id}", settings.INGEST_MARK_HOURS * 3600)
        try:
            record(r, site, hits, mark=mark)
        except Exception:
            _give_up(r, site, [inbox, claim, claimed], claim_id)
            raise
        counted += len(hits)
        INBOX_RELEASE.run(r, [inbox, claim, claimed], [claim_id, 0])


# Claims this process failed to count and could not give up either (Redis went away, or
# was killed and came back from its AOF with the claim in it): site id -> claim id. The
# next drain of the site in this process gives such a claim up first, so neither it nor a
# read's flush() waits out the lease (LEASE_MS) once Redis is back.
_not_given_up: dict[int, str] = {}
_not_given_up_lock = threading.Lock()


def _give_up(r, site: SiteInfo, script_keys, claim_id: str):
    """End a failed drainer's lease now, so the next drain takes the claim over at once."""
    try:
        INBOX_RELEASE.run(r, script_keys, [claim_id, 1])
    except OUTAGE:
        with _not_given_up_lock:
            _not_given_up[site.id] = claim_id


def _give_up_again(r, site: SiteInfo, script_keys):
    """Give up the claim an earlier drain of this process left (see _not_given_up)."""
    with _not_given_up_lock:
        claim_id = _not_given_up.pop(site.id, None)
    if claim_id is not None:
        _give_up(r, site, script_keys, claim_id)  # (out again: kept for the drain after)


def flush(r: redis.Redis, site: SiteInfo) -> int:
    """Count every event the site's inbox holds, now: reads call this first, so they see
    each event acknowledged before them. A Redis outage is left to the read itself."""
    try:
        return drain(r, site, wait=5.0)
    except OUTAGE:
        return 0


HINTS_AT_ONCE = 1000  # sites a drainer takes off the waiting hint in one pass


def drain_hinted(r: redis.Redis, sites_of: Callable[[list[int]], list[SiteInfo]]) -> int:
    """Count the inboxes of the sites the waiting hint names (keys.inbox_waiting), taking
    them off it: one command when nothing waits, whatever the number of sites. `sites_of`
    turns site ids into sites (a site unknown there is skipped). A hint taken off and not
    drained (an outage, a crash) is found by the next sweep (drain_waiting())."""
    ids = [int(raw) for raw in r.spop(keys.inbox_waiting(), HINTS_AT_ONCE) or []]
    return _drain_each(r, sites_of(ids)) if ids else 0


def drain_waiting(r: redis.Redis, sites: list[SiteInfo]) -> int:
    """Count the inbox of each of `sites` that holds events (or a claim a drainer left),
    looked at in one round trip. Returns the events counted. A site whose drain fails is
    logged and left for the next pass."""
    pipe = r.pipeline(transaction=False)
    for site in sites:
        pipe.llen(keys.inbox(site.id))
        pipe.exists(keys.inbox_claim(site.id)[0])
    answers = pipe.execute()
    return _drain_each(r, [site for n, site in enumerate(sites) if answers[2 * n] or answers[2 * n + 1]])


def _drain_each(r: redis.Redis, sites: list[SiteInfo]) -> int:
    """drain() each site; one whose drain fails is logged and left for the next pass."""
    counted = 0
    for site in sites:
        try:
            counted += drain(r, site)
        except OUTAGE:
            raise
        except Exception:
            log.exception("draining the inbox of site %s failed; it is retried on the next pass", site.id)
    return counted


class Drainer:
    """A web process's drainer: a thread that counts the inboxes of the sites it is woken
    for, DRAIN_DELAY after the first wake (so a busy server counts big batches and an idle
    one counts each event within a few milliseconds)."""

    def __init__(self, delay: float = DRAIN_DELAY):
        self.delay = delay
        self._sites: dict[int, SiteInfo] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def wake(self, site: SiteInfo):
        with self._wake:
            self._sites[site.id] = site
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="inbox-drainer", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self):
        while True:
            with self._wake:
                while not self._sites:
                    self._wake.wait()
            time.sleep(self.delay)
            with self._wake:
                sites, self._sites = list(self._sites.values()), {}
            for site in sites:
                try:
                    drain(get_redis(), site, wait=1.0)
                except Exception:  # (Redis out, or a bug: the events stay in the inbox for the next drain)
                    log.exception("draining the inbox of site %s failed; it is retried later", site.id)
