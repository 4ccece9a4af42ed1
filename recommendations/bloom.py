"""Scalable Bloom filters: "which of these items has this visitor not seen yet?"

One filter per visitor (the visitor's id is hashed into the key), sized from a capacity
and a target false-positive rate, growing like RedisBloom's scalable filters when it
fills. It never forgets a seen item (no false negatives) and wrongly says "seen" for at
most about `error_rate` of unseen ones. The scripts and key names are the store's, like
every other (analytics/store/scripts/bloom.lua holds the layout and the maths; keys.py).

Two backends with one interface: plain Redis (a Lua script over BITFIELD, any Redis 6.2+
or Valkey), and the server's own BF.* commands when the RedisBloom module is there
(Redis Stack, Redis 8), detected once per client, driven by a script too
(scripts/bloom_native.lua).

The site's budget. A filter is made for any user id a holder of the site's API key
names (`POST /api/v1/seen`, or a pageview with a `user_id` in a batch: one request of
10,000 events may name 10,000 new visitors) and grows with every new item, up to
MAX_FILTER_BYTES. So each visitor's cap does not bound the site: a leaked key, or a
client that sends a fresh id per request, would make Redis hold ~2 KB (at the default
settings) per id, without end. So all of a site's filters together are held to a budget
of bytes (`Site.bloom_max_memory_mb`, BloomConfig.budget_bytes): a filter that would take
the site past it is not made, and a full sub-filter gets no successor. The page views
are counted all the same (marking rides in ingest's pipeline and its answer is never the
event's); a visitor without a filter has seen nothing (recommendations are the plain top
pages), and `POST /api/v1/seen` answers 409. A budget of bytes rather than of filters:
a filter may be anything from ~2 KB to 16 MB, so a count of filters bounds nothing.

The books (lib/bloombudget.lua): a sorted set of the site's filters by the moment each
expires, a hash of what each is charged, and their sum. Every script that makes, grows
or touches a filter sets the moment on the filter's keys (PEXPIREAT) and on the books in
the same atomic step, so a filter whose moment has passed has left Redis: the next add
prunes it (PRUNE_MOST at a time) and readers subtract what is left (site_stats()). Why
not the alternatives: a counter of filters kept by INCR and expiry cannot be decremented
when a key expires (Redis tells nobody; keyspace notifications are fire-and-forget) and
drifts up for good; a periodic recount must SCAN the whole server's keyspace (every
site's keys) and is wrong between runs, so an attacker has the time between two runs.
The sorted set costs ~200 bytes a filter, charged with it (FILTER_OVERHEAD). It can only
be wrong where a key leaves Redis outside these scripts: the key browser's unlink sets
it right (sync()); a key removed otherwise (DEL by hand, eviction under maxmemory) stays
charged, on the safe side, until its moment passes; filters made before the books were
kept are put on them when next touched, or at once by `manage.py recount_bloom` (recount()).

At the budget nothing is evicted: the filters there belong to visitors who used them,
and letting new ids push them out would hand an attacker everyone's history. The first
refusal is logged (a warning), and the budget shows as full, with the refusals since,
in the admin and the dashboard, until the filters are back under 90% of the budget
(logged too): one line per episode, not per event.
"""

import hashlib
import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis

from analytics.models import Site
from analytics.sites import SiteInfo
from analytics.store import keys
from analytics.store.cluster import site_client
from analytics.store.scripts import BLOOM, BLOOM_BOOKS, BLOOM_NATIVE, Script

log = logging.getLogger(__name__)

MAX_ITEMS = 10_000
# A visitor's filter, all its sub-filters together, stays under 16 MB. Redis refuses a
# string past 512 MB (2^32 bits), but long before that one API call (any holder of a key,
# any user id) must not make the server allocate hundreds of MB: 16 MB holds a first
# sub-filter of about 12 million items at 1%, 3 million at one in a billion.
MAX_FILTER_BYTES = 16 * 1024 * 1024
MAX_FILTER_BITS = MAX_FILTER_BYTES * 8
DEFAULT_BUDGET_MB = 256  # a site's filters together (~130,000 visitors' at the default settings)
# What a filter costs beyond its own bits (or BF.INFO SIZE), charged to the budget with
# them: key names, the keyspace's and expiry's table entries, the shape hash, its entries
# on the books, allocator rounding. Measured over 2,000 filters at the default settings
# (MEMORY STATS: the dataset and the tables): 490 to 640 bytes on Valkey 9.1, Redis 6.2
# and 8.2, plain and RedisBloom. So a budget errs on the safe side, by at most ~7% of
# what the filters take (test_bloom_budget.py holds it within 20%).
FILTER_OVERHEAD = 640
DAY_SECONDS = 86_400  # an idle day (tests shorten it to see filters expire)


@dataclass(frozen=True)
class BloomConfig:
    capacity: int = 1000  # items the first sub-filter holds
    error_rate: float = 0.01  # target false-positive rate, all sub-filters together
    expansion: int = 2  # each new sub-filter holds this many times the previous one
    nonscaling: bool = False  # refuse items past capacity instead of growing
    idle_days: int = 180  # a filter nobody added to or checked for this long expires
    budget_bytes: int = DEFAULT_BUDGET_MB * 2**20  # the site's filters together, overhead included

    @classmethod
    def for_site(cls, site: Site) -> "BloomConfig":
        """From the site's row (the engine's cache keeps the answer as SiteInfo.bloom)."""
        return cls(
            site.bloom_capacity,
            site.bloom_error_rate,
            site.bloom_expansion,
            site.bloom_nonscaling,
            site.bloom_idle_days,
            site.bloom_max_memory_mb * 2**20,
        )


def config_of(site: SiteInfo) -> BloomConfig:
    """The site's settings as the engine's cache holds them (SiteInfo.bloom, made by the
    site_loaded hook); the defaults for a SiteInfo made by hand."""
    return site.bloom if isinstance(site.bloom, BloomConfig) else BloomConfig()


class FilterFull(Exception):
    """A non-scaling filter is at capacity, or a scaling one at MAX_FILTER_BYTES."""


class BudgetFull(FilterFull):
    """The site's filters are at its budget: this visitor's filter is not made, or does not
    grow, until filters expire or the budget is raised."""


class FilterTooLarge(Exception):
    """The settings would make a first sub-filter past MAX_FILTER_BYTES (settings saved
    before the model checked them): no filter is made with them."""


def shape(config: BloomConfig, j: int) -> tuple[float, int, int]:
    """(items, bits, hash functions) of sub-filter j, as bloom.lua computes them."""
    n = config.capacity * config.expansion**j
    p = config.error_rate * 0.5 ** (j + 1)
    m = math.ceil(math.ceil(-n * math.log(p) / math.log(2) ** 2) / 8) * 8
    k = max(1, math.floor(m / n * math.log(2) + 0.5))
    return n, m, k


def max_capacity(error_rate: float) -> int:
    """The largest capacity whose first sub-filter fits MAX_FILTER_BITS at this error rate."""
    low, high = 0, 2**31  # (the model's field holds less)
    while low < high:
        middle = (low + high + 1) // 2
        if shape(BloomConfig(middle, error_rate), 0)[1] <= MAX_FILTER_BITS:
            low = middle
        else:
            high = middle - 1
    return low


def size_problem(config: BloomConfig) -> str:
    """Why these settings cannot make a filter, or "" when they can: the first sub-filter
    alone must fit MAX_FILTER_BYTES (computed as bloom.lua does)."""
    if config.capacity < 1 or not 0 < config.error_rate < 1:
        return f"Bloom settings out of range: capacity {config.capacity}, error rate {config.error_rate:g}"
    bits = shape(config, 0)[1]
    if bits <= MAX_FILTER_BITS:
        return ""
    return (
        f"a visitor's first Bloom sub-filter would take {bits / 8 / 2**20:,.1f} MB (capacity {config.capacity:,} at "
        f"error rate {config.error_rate:g}); the largest allowed is {MAX_FILTER_BYTES // 2**20} MB, a capacity of at "
        f"most {max_capacity(config.error_rate):,} at this error rate: lower the capacity or raise the error rate"
    )


def item_hash(item: str) -> str:
    """The 128-bit hash whose halves drive the double hashing, as 32 hex digits."""
    return hashlib.blake2b(item.encode(), digest_size=16).hexdigest()


def user_digest(salt: bytes, user: str) -> str:
    """Visitor ids come from the public: keys carry a keyed hash of them, not the id."""
    return hashlib.blake2b(user.encode(), key=salt, digest_size=12).hexdigest()


_native: dict[int, bool] = {}


def has_native(r: redis.Redis) -> bool:
    """Does this server have RedisBloom's BF.* commands? Asked once per client."""
    known = _native.get(id(r))
    if known is None:
        try:
            r.execute_command("BF.EXISTS", keys.PREFIX + ":bloom-probe", "x")  # reads, creates nothing
            known = True
        except redis.exceptions.ResponseError:  # unknown command
            known = False
        except redis.exceptions.RedisError as e:  # (a cluster client refuses unknown commands itself)
            if "doesn't exist" not in str(e):
                raise
            known = False
        _native[id(r)] = known
    return known


def _call(
    site_id: int, digest: str, mode: str, items: list[str], config: BloomConfig, native: bool, touch: bool = True
):
    """(script, KEYS, ARGV) of an add or a check (scripts/bloom.lua, bloom_native.lua)."""
    books = list(keys.bloom_registry(site_id))
    ttl = config.idle_days * DAY_SECONDS if touch else 0
    head = [mode, config.capacity, repr(config.error_rate), config.expansion, "1" if config.nonscaling else "0", ttl]
    tail = [config.budget_bytes, FILTER_OVERHEAD, digest]
    if native:
        return BLOOM_NATIVE, [keys.bloom(site_id, digest), *books], [*head, MAX_FILTER_BYTES, *tail, *items]
    filter_keys = [keys.bloom(site_id, digest), keys.bloom_shape(site_id, digest)]
    return BLOOM, [*filter_keys, *books], [*head, MAX_FILTER_BITS, *tail, *(item_hash(item) for item in items)]


def _notice(site_id: int, notice: int, config: BloomConfig, site_name: str = ""):
    """Log what a script said of the budget: once when it begins refusing, once when it
    has room again (the scripts decide which call that is, atomically)."""
    name = f"{site_name} (site {site_id})" if site_name else f"site {site_id}"
    if notice == 1:
        log.warning(
            "Bloom filters of %s reached their budget of %s MB: visitors without a filter get none, and full filters "
            "do not grow, until filters expire (%s idle days) or the budget is raised; page views are still counted",
            name,
            f"{config.budget_bytes / 2**20:g}",
            config.idle_days,
        )
    elif notice == 2:
        log.info(
            "Bloom filters of %s are back under 90%% of their budget of %s MB", name, f"{config.budget_bytes / 2**20:g}"
        )


@dataclass
class Queued:
    """An add queued in a pipeline: what to run again if the server did not know the script."""

    script: Script
    keys: list
    args: list
    site_id: int
    config: BloomConfig
    site_name: str = ""


def queue_add(
    pipe, r: redis.Redis, site_id: int, digest: str, items: list[str], config: BloomConfig, site_name: str = ""
) -> Queued | None:
    """Queue an add in the caller's pipeline, one command (ingest marks pages seen this
    way, in the same round trip as the counts); check the answers with `check_queued`.
    Settings past the size limit queue nothing: the pageviews count, no page is marked
    seen; so does the site's budget, in the script: a refused add is no error here."""
    if size_problem(config):
        return None
    script, script_keys, args = _call(site_id, digest, "add", items, config, has_native(r))
    script.queue(pipe, script_keys, args)
    return Queued(script, script_keys, args, site_id, config, site_name)


def check_queued(r: redis.Redis, results: list, queued: list[Queued]):
    """After a pipeline with queued adds (their answers, in order): load the script and
    redo an add the server did not know it for, log what the budget says. No add fails
    its request: the page views beside it are counted already (in the same round trip),
    so raising would answer an error for events that count, and a spooled replay of
    them would meet the same failing add every time. A refused add (full filter, the
    budget) is expected; anything else (say a filter's key of another type, left by
    hand) is logged, and those pages stay unmarked."""
    for result, add in zip(results, queued):
        try:
            if isinstance(result, redis.exceptions.NoScriptError):
                result = add.script.run(r, add.keys, add.args)
            elif isinstance(result, Exception):
                raise result
        except redis.exceptions.ResponseError:
            log.error(
                "marking pages seen for a visitor of site %s failed; their page views are counted",
                add.site_id,
                exc_info=True,
            )
            continue
        _notice(add.site_id, result[1], add.config, add.site_name)


def add(
    r: redis.Redis,
    site_id: int,
    digest: str,
    items: list[str],
    config: BloomConfig,
    native: bool | None = None,
    site_name: str = "",
) -> list[bool]:
    """Mark items seen; True for each one that was new. FilterFull when a non-scaling
    filter, or one at the size limit, cannot take them all, BudgetFull when the site's
    budget cannot (the ones the filter can take are added); FilterTooLarge, before Redis
    is asked, when the settings are past the size limit."""
    if not items:
        return []
    problem = size_problem(config)
    if problem:
        raise FilterTooLarge(problem)
    native = native if native is not None else has_native(r)
    script, script_keys, args = _call(site_id, digest, "add", items, config, native)
    answers, notice = script.run(r, script_keys, args)
    _notice(site_id, notice, config, site_name)
    if -1 in answers:
        raise FilterFull(f"the filter is full ({config.capacity} items) and does not scale")
    if -2 in answers:
        raise FilterFull(f"the filter is full: it reached the size limit of {MAX_FILTER_BYTES // 2**20} MB a visitor")
    if -3 in answers:
        raise BudgetFull(
            f"the site's Bloom filters are at their memory budget ({config.budget_bytes / 2**20:g} MB): this user's "
            f"filter is not made, or does not grow, until filters expire ({config.idle_days} idle days) or the budget "
            "is raised"
        )
    return [answer == 1 for answer in answers]


def seen(
    r: redis.Redis,
    site_id: int,
    digest: str,
    items: list[str],
    config: BloomConfig,
    native: bool | None = None,
    touch: bool = True,
) -> list[bool]:
    """For each item: probably seen (True) or certainly not (False). A check counts as
    activity for the idle expiry unless `touch` is false (the dashboard only looks)."""
    if not items:
        return []
    native = native if native is not None else has_native(r)
    script, script_keys, args = _call(site_id, digest, "check", items, config, native, touch)
    answers, _ = script.run(r, script_keys, args)  # (a check puts an unbooked filter on the books, never past a budget)
    return [answer == 1 for answer in answers]


def sync(r: redis.Redis, site_id: int, digest: str, config: BloomConfig | None = None) -> int:
    """Set the books right for one visitor's filter from what Redis holds (after a key of
    it was unlinked, or for a recount); the bytes now charged for it, 0 when it is gone."""
    charged, notice = BLOOM_BOOKS.run(r, *_books_call(site_id, digest, config))
    if config:
        _notice(site_id, notice, config)
    return charged


def recount(r: redis.Redis, site_id: int, config: BloomConfig | None = None, batch: int = 500) -> int:
    """Put every filter of the site on the books and take off those that are gone (filters
    made before the books were kept; keys removed by hand): SCAN of the site's filter keys
    (the whole server's keyspace: a command for an operator, not for a request). Returns
    how many filters are on the books."""
    live = keys.bloom_registry(site_id)[0]
    digests = {
        digest
        for key in site_client(r, site_id).scan_iter(match=keys.site_pattern(site_id, "bloom:*"), count=1000)
        if (digest := keys.bloom_digest(site_id, key))
    }
    digests.update(member.decode() for member, _ in r.zscan_iter(live))
    calls = [_books_call(site_id, d, config) for d in sorted(digests)]
    for i in range(0, len(calls), batch):
        for _, notice in BLOOM_BOOKS.run_many(r, calls[i : i + batch]):
            if config:
                _notice(site_id, notice, config)
    return r.zcount(live, _now_ms(r, site_id), "+inf")


def _books_call(site_id: int, digest: str, config: BloomConfig | None) -> tuple[list, list]:
    """KEYS and ARGV of bloom_books.lua for one visitor's filter."""
    limit = config.budget_bytes if config else -1  # (-1: no "room again" without the site's budget)
    return [*keys.bloom_registry(site_id), keys.bloom(site_id, digest), keys.bloom_shape(site_id, digest)], [
        limit,
        FILTER_OVERHEAD,
        digest,
    ]


def _now_ms(r: redis.Redis, site_id: int) -> int:
    """The clock the scripts read (the server's that holds the site), in ms."""
    seconds, micros = site_client(r, site_id).time()
    return seconds * 1000 + micros // 1000


@dataclass
class FilterStats:
    filters: int = 0  # live filters on the site's books
    memory_bytes: int = 0  # what they are charged against the budget: their bits (or size), FILTER_OVERHEAD each
    budget_bytes: int | None = None  # the site's budget, when given
    full_since: str | None = None  # while the budget is full: when it first refused an add (ISO, UTC)
    refused: int = 0  # the adds it refused since
    average_fill: float = 0.0  # share of bits set, over a sample of the filters
    expected_error: float = 0.0  # mean false-positive rate at the current fill, over the sample


MAX_EXPIRED_READ = 10_000  # expired filters not pruned yet whose charges a reader subtracts


def site_stats(
    r: redis.Redis, site_id: int, config: BloomConfig | None = None, max_filters: int = 1_000
) -> FilterStats:
    """Number of filters and their memory (from the books, less the filters expired since
    the last prune: no SCAN), the budget and whether it is full; the average fill ratio
    and the false-positive rate expected at the current fill (per sub-filter fill^k,
    compounded) over a random sample of up to max_filters filters."""
    live, sizes, budget = keys.bloom_registry(site_id)
    now = _now_ms(r, site_id)
    pipe = r.pipeline(transaction=False)
    pipe.zcount(live, now, "+inf")
    pipe.zrangebyscore(live, "-inf", f"({now}", start=0, num=MAX_EXPIRED_READ)
    pipe.hmget(budget, "bytes", "full-since", "refused")
    pipe.zrandmember(live, max_filters, withscores=True)
    count, expired, (total, full_since, refused), sample = pipe.execute()
    gone = sum(int(size or 0) for size in r.hmget(sizes, expired)) if expired else 0
    stats = FilterStats(
        filters=count,
        memory_bytes=max(0, int(total or 0) - gone),
        budget_bytes=config.budget_bytes if config else None,
        full_since=datetime.fromtimestamp(int(full_since) / 1000, UTC).isoformat(timespec="seconds")
        if full_since
        else None,
        refused=int(refused or 0) if full_since else 0,
    )
    digests = [member.decode() for member, deadline in _pairs(sample or []) if deadline >= now]
    fills_errors = _sample_fill(r, site_id, digests, config or BloomConfig())
    if fills_errors:
        stats.average_fill = sum(fill for fill, _ in fills_errors) / len(fills_errors)
        stats.expected_error = sum(error for _, error in fills_errors) / len(fills_errors)
    return stats


def _pairs(sample) -> list[tuple[bytes, float]]:
    """ZRANDMEMBER ... WITHSCORES as (member, score) pairs, as redis-py answers under either protocol."""
    if sample and isinstance(sample[0], (list, tuple)):
        return [(member, float(score)) for member, score in sample]
    return [(sample[i], float(sample[i + 1])) for i in range(0, len(sample), 2)]


def _sample_fill(r: redis.Redis, site_id: int, digests: list[str], config: BloomConfig) -> list[tuple[float, float]]:
    """(share of bits set, false-positive rate at that fill) of each sampled filter: on
    plain Redis counted (BITCOUNT per sub-filter); on RedisBloom estimated from its items
    per sub-filter (BF.INFO), at the site's error rate."""
    pipe = r.pipeline(transaction=False)
    for digest in digests:
        pipe.hgetall(keys.bloom_shape(site_id, digest))
    metas = pipe.execute() if digests else []
    pipe = r.pipeline(transaction=False)
    layouts: list[tuple[str, Any]] = []  # (kind, sub-filters' (m, k): None for "native")
    for digest, meta in zip(digests, metas):
        if meta:
            shaped = BloomConfig(int(float(meta[b"capacity"])), float(meta[b"error"]), int(float(meta[b"expansion"])))
            subs, offset = [], 0
            for j in range(int(meta[b"filters"])):
                _, m, k = shape(shaped, j)
                pipe.bitcount(keys.bloom(site_id, digest), offset // 8, (offset + m) // 8 - 1)
                subs.append((m, k))
                offset += m
            layouts.append(("plain", subs))
        elif has_native(r):
            pipe.execute_command("BF.INFO", keys.bloom(site_id, digest))
            layouts.append(("native", None))
    answers = iter(pipe.execute(raise_on_error=False) if layouts else [])
    results = []
    for kind, subs in layouts:
        if kind == "plain":
            ones = [next(answers) for _ in subs]
            set_bits, total_bits, miss = sum(ones), sum(m for m, _ in subs), 1.0
            for (m, k), n in zip(subs, ones):
                miss *= 1 - (n / m) ** k
            results.append((set_bits / total_bits, 1 - miss))
        else:
            info = next(answers)
            if isinstance(info, Exception):  # (gone since, or not a filter of the module)
                continue
            results.append(_native_fill(info, config))
    return results


def _native_fill(info, config: BloomConfig) -> tuple[float, float]:
    """A RedisBloom filter's expected share of bits set and false-positive rate: its
    sub-filters j hold capacity * expansion^j items at error / 4 * 0.5^j (the module
    halves the first rate given it, error / 2), all full but the newest."""
    fields = dict(zip(info[::2], info[1::2])) if isinstance(info, list) else info
    fields = {(k.decode() if isinstance(k, bytes) else k): v for k, v in fields.items()}
    capacity, filters = int(fields["Capacity"]), int(fields["Number of filters"])
    items, expansion = int(fields["Number of items inserted"]), int(fields["Expansion rate"] or 1)
    first = capacity / filters if expansion == 1 else capacity * (expansion - 1) / (expansion**filters - 1)
    set_bits, total_bits, miss = 0.0, 0.0, 1.0
    for j in range(filters):
        n = first * expansion**j
        held = n if j < filters - 1 else max(0, items - (capacity - n))
        p = config.error_rate / 4 * 0.5**j
        m = n * -math.log(p) / math.log(2) ** 2
        k = max(1, round(m / n * math.log(2)))
        fill = 1 - math.exp(-k * held / m)
        set_bits, total_bits = set_bits + fill * m, total_bits + m
        miss *= 1 - fill**k
    return set_bits / total_bits, 1 - miss
