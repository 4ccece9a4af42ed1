"""The stable visitor-id map as Python reads it (lib/idmap.lua writes it): its bucket keys,
and every (digest prefix, id) pair, for the admin's memory figures and for tests."""
import redis

from . import keys

FIELD = 7  # digest bytes a bucket keeps (lib/idmap.lua: IDMAP_FIELD)
WIDE = 10  # digest bytes the buckets kept before (IDMAP_WIDE)


def bucket_keys(r: redis.Redis, site_id: int) -> list[str]:
    buckets = int(r.get(keys.visitor_id_buckets(site_id)) or 1)
    return [keys.visitor_id_bucket(site_id, n) for n in range(buckets)]


def all_ids(r: redis.Redis, site_id: int) -> dict[bytes, int]:
    """{digest (its first FIELD bytes in the buckets, or WIDE in a bucket not narrowed yet;
    whole in the map of before): id}."""
    pipe = r.pipeline(transaction=False)
    names = [*bucket_keys(r, site_id), keys.visitor_ids(site_id)]
    for name in names:
        pipe.hgetall(name)
    return {field: int(value) for answer in pipe.execute() for field, value in answer.items()}


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


def narrow(r: redis.Redis, site_id: int, buckets: int = 200, progress=None) -> int:
    """Shorten the fields of the buckets written before the short fields (idmap_narrow.lua,
    a few buckets per call); ingest may run meanwhile, and moves a returning visitor's
    field itself. Returns how many fields were shortened; the map is marked narrow."""
    from .cluster import site_client
    from .scripts import IDMAP_NARROW

    node = site_client(r, site_id)
    at, shortened = 0, 0
    while at >= 0:
        at, done = IDMAP_NARROW.run(node, [keys.visitor_ids(site_id)], [at, buckets])
        shortened += done
        if progress:
            progress(done)
    return shortened
