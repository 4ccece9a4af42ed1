"""Scalable Bloom filters: "which of these items has this visitor not seen yet?"

One filter per visitor (the visitor's id is hashed into the key), sized from a capacity
and a target false-positive rate, growing like RedisBloom's scalable filters when it
fills (see scripts/bloom.lua for the layout and the maths). It never forgets a seen item
(no false negatives) and wrongly says "seen" for at most about `error_rate` of unseen ones.

Two backends with one interface: plain Redis (a Lua script over BITFIELD, any Redis 6.2+
or Valkey), and the server's own BF.* commands when the RedisBloom module is there
(Redis Stack, Redis 8), detected once per client.
"""
import hashlib
import math
from dataclasses import dataclass

import redis

from ..store import keys
from ..store.cluster import site_client
from ..store.scripts import BLOOM

MAX_ITEMS = 10_000
# A visitor's filter, all its sub-filters together, stays under 16 MB. Redis refuses a
# string past 512 MB (2^32 bits), but long before that one API call (any holder of a key,
# any user id) must not make the server allocate hundreds of MB: 16 MB holds a first
# sub-filter of about 12 million items at 1%, 3 million at one in a billion.
MAX_FILTER_BYTES = 16 * 1024 * 1024
MAX_FILTER_BITS = MAX_FILTER_BYTES * 8


@dataclass(frozen=True)
class BloomConfig:
    capacity: int = 1000  # items the first sub-filter holds
    error_rate: float = 0.01  # target false-positive rate, all sub-filters together
    expansion: int = 2  # each new sub-filter holds this many times the previous one
    nonscaling: bool = False  # refuse items past capacity instead of growing
    idle_days: int = 180  # a filter nobody added to or checked for this long expires

    @classmethod
    def for_site(cls, site) -> "BloomConfig":
        return cls(site.bloom_capacity, site.bloom_error_rate, site.bloom_expansion, site.bloom_nonscaling, site.bloom_idle_days)


class FilterFull(Exception):
    """A non-scaling filter is at capacity, or a scaling one at MAX_FILTER_BYTES."""


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
        f"error rate {config.error_rate:g}); the largest allowed is {MAX_FILTER_BYTES // 2**20} MB, a capacity of at most "
        f"{max_capacity(config.error_rate):,} at this error rate: lower the capacity or raise the error rate"
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


def _script_args(mode: str, config: BloomConfig, items: list[str], touch: bool = True) -> list:
    return [
        mode,
        config.capacity,
        repr(config.error_rate),
        config.expansion,
        "1" if config.nonscaling else "0",
        config.idle_days * 86400 if touch else 0,
        MAX_FILTER_BITS,
        *(item_hash(item) for item in items),
    ]


def queue_add(pipe, r: redis.Redis, site_id: int, digest: str, items: list[str], config: BloomConfig):
    """Queue an add in the caller's pipeline (ingest marks pages seen this way, in the
    same round trip as the counts); check the answers with `check_queued`. Settings past
    the size limit queue nothing: the pageviews count, no page is marked seen."""
    if size_problem(config):
        return
    if has_native(r):
        key = keys.bloom(site_id, digest)
        pipe.execute_command(*_reserve_args(key, config))
        pipe.execute_command("BF.MADD", key, *items)
        pipe.expire(key, config.idle_days * 86400)
    else:
        BLOOM.queue(pipe, [keys.bloom(site_id, digest), keys.bloom_shape(site_id, digest)], _script_args("add", config, items))


def check_queued(r: redis.Redis, results: list, commands: list):
    """After a pipeline with queued adds: load the script and redo an add the server did
    not know it for; a full non-scaling filter or an existing BF filter is no error here
    (a page view is still counted), anything else is raised."""
    for result, (args, _) in zip(results, commands):
        if isinstance(result, redis.exceptions.NoScriptError):
            nkeys = int(args[2])
            BLOOM.run(r, list(args[3 : 3 + nkeys]), list(args[3 + nkeys :]))
        elif isinstance(result, redis.exceptions.ResponseError):
            message = str(result).lower()
            if "exists" not in message and "full" not in message:
                raise result


def add(r: redis.Redis, site_id: int, digest: str, items: list[str], config: BloomConfig, native: bool | None = None) -> list[bool]:
    """Mark items seen; True for each one that was new. FilterFull when a non-scaling
    filter, or one at the size limit, cannot take them all (the ones before that point
    are added); FilterTooLarge, before Redis is asked, when the settings are past it."""
    if not items:
        return []
    problem = size_problem(config)
    if problem:
        raise FilterTooLarge(problem)
    if native if native is not None else has_native(r):
        return _native_add(r, keys.bloom(site_id, digest), items, config)
    answers = BLOOM.run(r, [keys.bloom(site_id, digest), keys.bloom_shape(site_id, digest)], _script_args("add", config, items))
    if -1 in answers:
        raise FilterFull(f"the filter is full ({config.capacity} items) and does not scale")
    if -2 in answers:
        raise FilterFull(f"the filter is full: it reached the size limit of {MAX_FILTER_BYTES // 2**20} MB a visitor")
    return [answer == 1 for answer in answers]


def seen(
    r: redis.Redis, site_id: int, digest: str, items: list[str], config: BloomConfig, native: bool | None = None, touch: bool = True
) -> list[bool]:
    """For each item: probably seen (True) or certainly not (False). A check counts as
    activity for the idle expiry unless `touch` is false (the dashboard only looks)."""
    if not items:
        return []
    if native if native is not None else has_native(r):
        key = keys.bloom(site_id, digest)
        if not r.exists(key):
            return [False] * len(items)
        answers = r.execute_command("BF.MEXISTS", key, *items)
        if touch:
            r.expire(key, config.idle_days * 86400)
        return [bool(a) for a in answers]
    answers = BLOOM.run(
        r, [keys.bloom(site_id, digest), keys.bloom_shape(site_id, digest)], _script_args("check", config, items, touch)
    )
    return [answer == 1 for answer in answers]


def _reserve_args(key: str, config: BloomConfig) -> list:
    # The first sub-filter gets half the target rate, as in the plain backend.
    args = ["BF.RESERVE", key, config.error_rate / 2, config.capacity]
    return args + (["NONSCALING"] if config.nonscaling else ["EXPANSION", config.expansion])


def _native_add(r: redis.Redis, key: str, items: list[str], config: BloomConfig) -> list[bool]:
    try:
        r.execute_command(*_reserve_args(key, config))
    except redis.exceptions.ResponseError as e:
        if "exists" not in str(e).lower():
            raise
    answers = r.execute_command("BF.MADD", key, *items)
    r.expire(key, config.idle_days * 86400)
    if any(isinstance(a, Exception) for a in answers):
        raise FilterFull(f"the filter is full ({config.capacity} items) and does not scale")
    return [bool(a) for a in answers]


@dataclass
class FilterStats:
    filters: int = 0
    memory_bytes: int = 0
    average_fill: float = 0.0
    expected_error: float = 0.0  # mean false-positive rate at the current fill


def site_stats(r: redis.Redis, site_id: int, max_filters: int = 10_000) -> FilterStats:
    """Number of filters, memory, average fill ratio and the false-positive rate expected
    at the current fill (per sub-filter fill^k, compounded), over up to max_filters
    filters (SCAN, never KEYS)."""
    shapes = []
    for key in site_client(r, site_id).scan_iter(match=keys.site_prefix(site_id) + "bloom:*:shape", count=1000):
        shapes.append(key)
        if len(shapes) >= max_filters:
            break
    if not shapes:
        return FilterStats()
    pipe = r.pipeline(transaction=False)
    for key in shapes:
        pipe.hgetall(key)
    metas = pipe.execute()
    pipe = r.pipeline(transaction=False)
    layouts = []
    for key, meta in zip(shapes, metas):
        if not meta:
            continue
        bits_key = key[: -len(b":shape")]
        config = BloomConfig(int(float(meta[b"capacity"])), float(meta[b"error"]), int(float(meta[b"expansion"])))
        subs, offset = [], 0
        for j in range(int(meta[b"filters"])):
            _, m, k = shape(config, j)
            pipe.bitcount(bits_key, offset // 8, (offset + m) // 8 - 1)
            subs.append((m, k))
            offset += m
        pipe.memory_usage(bits_key)
        pipe.memory_usage(key)
        layouts.append(subs)
    answers = iter(pipe.execute())
    stats = FilterStats(filters=len(layouts))
    fills, errors = [], []
    for subs in layouts:
        set_bits, total_bits, miss = 0, 0, 1.0
        for m, k in subs:
            ones = next(answers)
            set_bits, total_bits = set_bits + ones, total_bits + m
            miss *= 1 - (ones / m) ** k
        stats.memory_bytes += (next(answers) or 0) + (next(answers) or 0)
        fills.append(set_bits / total_bits)
        errors.append(1 - miss)
    stats.average_fill = sum(fills) / len(fills)
    stats.expected_error = sum(errors) / len(errors)
    return stats
