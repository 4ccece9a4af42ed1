"""The key browser behind the admin's "Redis keys" page and `manage.py purgesite`: one
site's keys, walked with SCAN (never KEYS, which blocks the server on a big database),
removed with UNLINK (freed in the background, so a big key does not block either).

Every function is held to the site's prefix (`keys.site_pattern`): a pattern typed in the
admin narrows the site's keys and cannot reach another site's. A purge needs only the
site's id, so it works for a site whose row is gone (analytics.site_deletion).
"""

import heapq
import logging
import re
from collections.abc import Callable

import redis

from . import hooks
from .store import keys
from .store.cluster import site_client

log = logging.getLogger(__name__)

MAX_SCANS_PER_PAGE = 100  # SCAN calls one page may make when few keys match (a bound, not a loop forever)
TOP = 5  # keys per type in the big-key report


def _name(key: bytes | str) -> str:
    return key.decode(errors="replace") if isinstance(key, bytes) else key


def _describe(r: redis.Redis, names: list) -> list[dict]:
    """Type, TTL (seconds, None when it has none) and bytes of each key, in one round trip;
    a key gone since SCAN saw it is left out."""
    pipe = r.pipeline(transaction=False)
    for name in names:
        pipe.type(name)
        pipe.pttl(name)
        pipe.memory_usage(name)
    answers = pipe.execute(raise_on_error=False)
    rows = []
    for i, name in enumerate(names):
        kind, pttl, size = answers[3 * i : 3 * i + 3]
        kind = _name(kind)
        if kind == "none" or pttl == -2:
            continue
        rows.append(
            {
                "key": _name(name),
                "type": kind,
                "ttl": None if pttl == -1 else max(pttl, 0) / 1000,
                "bytes": size if isinstance(size, int) else None,
            }
        )
    return rows


MAX_CURSOR = 2**64 - 1  # SCAN's cursor is an unsigned 64-bit number: Redis answers "invalid cursor" past it


def scan_cursor(text: str) -> int | None:
    """A SCAN cursor from a URL's text, or None when the text is none: ASCII digits only
    (int() would take "-1", " 7" and other scripts' digits too), at most MAX_CURSOR."""
    if not re.fullmatch(r"[0-9]{1,20}", text):
        return None
    cursor = int(text)
    return cursor if cursor <= MAX_CURSOR else None


def browse(
    r: redis.Redis, site_id: int, pattern: str = "*", cursor: int = 0, count: int = 200
) -> tuple[int, list[dict]]:
    """One page of the site's keys matching `pattern` (a SCAN glob after the site prefix):
    (the cursor of the next page, 0 at the end; [{key, type, ttl, bytes}] sorted by name).

    SCAN with MATCH may answer a call with no key at all (the filter runs after the slots
    are read), so this scans on until it has `count` keys, the end, or its bound of calls."""
    r = site_client(r, site_id)  # (on a cluster: the master that holds the site's slot)
    match = keys.site_pattern(site_id, pattern or "*")
    prefix = keys.site_prefix(site_id)
    found: list[bytes | str] = []
    for _ in range(MAX_SCANS_PER_PAGE):
        cursor, batch = r.scan(cursor, match=match, count=count)
        found.extend(name for name in batch if _name(name).startswith(prefix))
        if cursor == 0 or len(found) >= count:
            break
    rows = _describe(r, found)
    rows.sort(key=lambda row: row["key"])
    return int(cursor), rows


def big_keys(r: redis.Redis, site_id: int, sample: int = 10_000) -> dict[str, list[tuple[str, int]]]:
    """{type: [(key, bytes)], the largest first, TOP of them} over up to `sample` of the
    site's keys (like `redis-cli --bigkeys`, by MEMORY USAGE rather than by length)."""
    r = site_client(r, site_id)
    tops: dict[str, list[tuple[int, str]]] = {}
    seen, cursor = 0, 0
    while seen < sample:
        cursor, batch = r.scan(cursor, match=keys.site_pattern(site_id), count=min(1000, sample - seen))
        batch = batch[: sample - seen]
        seen += len(batch)
        for row in _describe(r, batch):
            heap = tops.setdefault(row["type"], [])
            item = (row["bytes"] or 0, row["key"])
            if len(heap) < TOP:
                heapq.heappush(heap, item)
            else:
                heapq.heappushpop(heap, item)
        if cursor == 0:
            break
    return {kind: [(key, size) for size, key in sorted(heap, reverse=True)] for kind, heap in sorted(tops.items())}


def belongs(site_id: int, key: bytes | str) -> bool:
    return _name(key).startswith(keys.site_prefix(site_id))


def unlink(r: redis.Redis, site_id: int, key: str) -> bool:
    """UNLINK one key of the site: True if it was there (or keys that go with it). A key
    outside the site's prefix is refused (ValueError), whatever the caller was sent. An
    app's records of its keys follow (hooks.key_unlinked: the recommendations app takes a
    filter off its Bloom budget's books, and unlinks the books whole)."""
    if not belongs(site_id, key):
        raise ValueError(f"not a key of site {site_id}")
    gone = bool(r.unlink(key))
    return hooks.registered.key_unlinked(r, site_id, _name(key)) or gone


def purge(r: redis.Redis, site_id: int, batch: int = 500, progress: Callable[[int], object] | None = None) -> int:
    """UNLINK every key of the site, `batch` at a time as SCAN finds them; `progress(n)` is
    called after each batch with the number just removed. Returns how many went.

    SCAN ends after one full pass even while keys are written, so this ends; keys written
    during the pass (ingest still running) may survive it."""
    r = site_client(r, site_id)
    deleted, cursor = 0, 0
    while True:
        cursor, names = r.scan(cursor, match=keys.site_pattern(site_id), count=batch)
        if names:
            gone = r.unlink(*names)
            deleted += gone
            if progress:
                progress(gone)
        if cursor == 0:
            return deleted


def purge_deleted(r: redis.Redis, site_id: int, domain: str = "") -> int | None:
    """`purge` for a site whose row is gone: how many keys went, or None when Redis failed.
    Then the keys stay, and the warning names the command that removes them later (nothing
    else would: only a site's rollups give its keys an expiry)."""
    try:
        return purge(r, site_id)
    except redis.exceptions.RedisError as e:
        log.warning(
            "the Redis keys of deleted site %s (id %s) are still there (%s: %s); remove them with "
            "`manage.py purgesite --site-id %s --yes` once Redis answers",
            domain or "?",
            site_id,
            e.__class__.__name__,
            e,
            site_id,
        )
        return None
