"""The stable visitor-id map as Python reads it (lib/idmap.lua writes it): its bucket keys,
every (digest prefix, id) pair, for the admin's memory figures and for tests, and the
moves of maps kept in earlier layouts."""

import redis

from . import keys

FIELD = 7  # digest bytes a bucket keeps (lib/idmap.lua: IDMAP_FIELD)
WIDE = 10  # digest bytes the hash buckets of two versions before kept
LOAD = 96  # records per bucket on average (IDMAP_LOAD)


def bucket_of(digest: bytes, buckets: int) -> int:
    """The bucket of a digest among `buckets` (lib/idmap.lua: idmap_bucket, linear hashing)."""
    level = 1
    while level * 2 <= buckets:
        level *= 2
    h = int.from_bytes(digest[:4], "big")
    a = h % level
    return h % (2 * level) if a < buckets - level else a


def unpack(bucket: bytes, n: int) -> dict[bytes, int]:
    """Packed bucket number n's records: {the first FIELD bytes of a digest: id} (a short
    field, without its fourth byte, gets it back from n: lib/idmap.lua)."""
    if not bucket:
        return {}
    width, short = bucket[0] % 16, bucket[0] >= 16
    field = FIELD - 1 if short else FIELD
    fourth = bytes([n % 256])
    found = {}
    for p in range(1, len(bucket), field + width):
        f = bucket[p : p + field]
        found[f[:3] + fourth + f[3:] if short else f] = int.from_bytes(bucket[p + field : p + field + width], "big")
    return found


def bucket_keys(r: redis.Redis, site_id: int) -> list[str]:
    """The packed buckets' keys, and until the map is packed the earlier layout's too."""
    buckets = int(r.get(keys.visitor_id_buckets(site_id)) or 1)
    names = [keys.visitor_id_bucket(site_id, n) for n in range(buckets)]
    if not r.exists(keys.visitor_id_packed(site_id)):
        names += [keys.visitor_id_hash_bucket(site_id, n) for n in range(buckets)]
    return names


def all_ids(r: redis.Redis, site_id: int) -> dict[bytes, int]:
    """{digest (its first FIELD bytes in a packed bucket; FIELD or WIDE in a hash bucket
    of an earlier layout; whole in the map of before the buckets): id}."""
    pipe = r.pipeline(transaction=False)
    buckets = int(r.get(keys.visitor_id_buckets(site_id)) or 1)
    for n in range(buckets):
        pipe.get(keys.visitor_id_bucket(site_id, n))
    for n in range(buckets):
        pipe.hgetall(keys.visitor_id_hash_bucket(site_id, n))
    pipe.hgetall(keys.visitor_ids(site_id))
    answers = pipe.execute()
    found: dict[bytes, int] = {}
    for n, packed in enumerate(answers[:buckets]):
        found.update(unpack(packed or b"", n))
    for answer in answers[buckets:]:
        found.update((field, int(value)) for field, value in answer.items())
    return found


def migrate(r: redis.Redis, site_id: int, batch: int = 500, progress=None) -> int:
    """Move every visitor of the map of before into the buckets (idmap_migrate.lua, a batch
    per call, HSCAN to find them); ingest may run meanwhile. Returns how many moved."""
    from .cluster import site_client
    from .scripts import IDMAP_MIGRATE

    node = site_client(r, site_id)
    old, counter = keys.visitor_ids(site_id), keys.visitor_id_counter(site_id)
    moved, cursor = 0, 0
    while True:
        cursor, found = node.hscan(old, cursor, count=batch)
        if found:
            done = IDMAP_MIGRATE.run(node, [old, counter], list(found))
            moved += done
            if progress:
                progress(done)
        if cursor == 0:
            return moved


def pack(r: redis.Redis, site_id: int, buckets: int = 100, progress=None) -> int:
    """Move the buckets of an earlier layout (small hashes) into packed ones
    (idmap_pack.lua, a few buckets per call); ingest may run meanwhile, and moves a
    bucket it reads itself. Returns how many visitors moved; the map is marked packed."""
    from .cluster import site_client
    from .scripts import IDMAP_PACK

    node = site_client(r, site_id)
    at, moved = 0, 0
    while at >= 0:
        at, done = IDMAP_PACK.run(node, [keys.visitor_ids(site_id)], [at, buckets])
        moved += done
        if progress:
            progress(done)
    return moved
