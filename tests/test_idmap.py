"""The stable visitor-id map in buckets (lib/idmap.lua): exact ids, small listpack
buckets, bytes per visitor, and the map of before drained as its visitors return."""
import random
from datetime import UTC, datetime

from analytics.ingest import Hit, record
from analytics.ingest.identity import digest, identity_source
from analytics.sites import SiteInfo
from analytics.store import idmap, keys
from analytics.store.cluster import site_client
from analytics.store.idmap import FIELD, WIDE
from analytics.store.scripts import RECORD_BATCH

BUDGET = 24  # bytes per visitor ever seen (issue 13's target)


def hits(names):
    return [Hit(None, "/", "pageview", identity_source(None, name, None, None)) for name in names]


def test_every_visitor_gets_one_id_and_keeps_it(site, r):
    info = SiteInfo.from_model(site)
    rng = random.Random(3)
    seen: dict[str, int] = {}
    for _ in range(40):
        batch = [f"v{rng.randrange(6000)}" for _ in range(400)]
        record(r, info, hits(batch), now=datetime.now(UTC))
        seen.update(dict.fromkeys(batch, 0))
    stored = idmap.all_ids(r, site.pk)
    expected = {digest(info.salt, identity_source(None, name, None, None))[:FIELD] for name in seen}
    assert set(stored) == expected  # every visitor, once
    assert sorted(stored.values()) == list(range(len(seen)))  # dense ids, none given twice
    assert int(r.get(keys.visitor_id_buckets(site.pk))) == -(-len(seen) // 48)


def test_the_buckets_stay_small_listpacks_within_the_byte_budget(site, r):
    info = SiteInfo.from_model(site)
    n = 30_000
    for start in range(0, n, 1000):
        record(r, info, hits(f"u{i}" for i in range(start, start + 1000)), now=datetime.now(UTC))
    names = idmap.bucket_keys(r, site.pk)
    pipe = r.pipeline(transaction=False)
    for name in names:
        pipe.object("encoding", name)
        pipe.hlen(name)
        pipe.memory_usage(name, samples=0)
    answers = pipe.execute()
    encodings, sizes, usage = set(answers[0::3]), answers[1::3], sum(answers[2::3])
    assert encodings <= {b"listpack", b"ziplist"}  # (the compact encoding; Redis 6.2 calls it ziplist)
    assert sum(sizes) == n and max(sizes) < 128
    assert usage / n <= BUDGET, f"{usage / n:.1f} bytes per visitor"


def test_visitors_of_the_map_of_before_keep_their_ids_and_move(site, r):
    info = SiteInfo.from_model(site)
    old = {digest(info.salt, identity_source(None, f"o{i}", None, None)): i for i in range(300)}
    r.hset(keys.visitor_ids(site.pk), mapping=old)  # a map as Tally kept it before the buckets
    r.set(keys.visitor_id_counter(site.pk), 300)
    r.script_load(RECORD_BATCH.source)
    record(r, info, hits([f"o{i}" for i in range(100)] + ["new"]), now=datetime.now(UTC))
    stored = idmap.all_ids(r, site.pk)
    assert all(stored[d[:FIELD]] == i for d, i in old.items() if i < 100)  # moved, same ids
    assert r.hlen(keys.visitor_ids(site.pk)) == 200  # the rest wait for their return
    assert stored[digest(info.salt, identity_source(None, "new", None, None))[:FIELD]] == 300
    day = info.today()
    assert r.bitcount(keys.new_visitors(site.pk, day)) == 1  # the returning ones are not new


def test_the_migration_moves_the_rest_and_ids_stay(site, r):
    from django.core.management import call_command

    info = SiteInfo.from_model(site)
    old = {digest(info.salt, identity_source(None, f"o{i}", None, None)): i for i in range(1200)}
    r.hset(keys.visitor_ids(site.pk), mapping=old)
    r.set(keys.visitor_id_counter(site.pk), 1200)
    record(r, info, hits([f"o{i}" for i in range(10)]), now=datetime.now(UTC))  # (ingest moves these itself)
    call_command("migrate_visitor_ids", "example.com")
    assert not r.exists(keys.visitor_ids(site.pk))
    assert idmap.all_ids(r, site.pk) == {d[:FIELD]: i for d, i in old.items()}
    record(r, info, hits(["o5", "o999", "fresh"]), now=datetime.now(UTC))
    assert r.bitcount(keys.new_visitors(site.pk, info.today())) == 1  # only "fresh" is new


def test_new_visitors_grow_redis_by_at_most_32_bytes_each_once_their_visits_close(site, r):
    """Issue 13's budget, all of the site's structures included (ids, bitmaps, HLLs,
    counters: MEMORY USAGE of every key), but for the open visits' state, which expires 1.5
    hours after a visit's last event (`make bench` prints the figure for 300,000 visitors)."""
    info = SiteInfo.from_model(site)
    n = 30_000
    for start in range(0, n, 1000):
        record(r, info, hits(f"u{i}" for i in range(start, start + 1000)), now=datetime.now(UTC))
    node = site_client(r, site.pk)
    names = [k for k in node.scan_iter(match=keys.site_prefix(site.pk) + "*", count=1000) if b":sess" not in k]
    total = sum(node.memory_usage(k, samples=0) or 0 for k in names)  # (0: gone since, like the live tick's key)
    assert total / n <= 32, f"{total / n:.1f} bytes per visitor"


def wide_map(r, info, names: list[str]) -> dict[bytes, int]:
    """A bucketed map as Tally kept it before the short fields: WIDE bytes of each digest,
    in the buckets the same linear hashing picks, and no narrow mark."""
    n = len(names)
    record(r, info, hits(names), now=datetime.now(UTC))  # (buckets and ids as ingest makes them)
    short = idmap.all_ids(r, info.id)
    digests = {digest(info.salt, identity_source(None, name, None, None)) for name in names}
    pipe = r.pipeline(transaction=False)
    for name in idmap.bucket_keys(r, info.id):
        for field, id_ in r.hgetall(name).items():
            whole = next(d for d in digests if d[:FIELD] == field)
            pipe.hdel(name, field)
            pipe.hset(name, whole[:WIDE], id_)
    pipe.delete(keys.visitor_id_narrow(info.id))
    node = site_client(r, info.id)
    pipe.delete(*node.scan_iter(match=keys.site_prefix(info.id) + "*sess*"))  # (their visits are over: a return looks them up)
    pipe.execute()
    assert len(short) == n
    return {d[:WIDE]: short[d[:FIELD]] for d in digests}


def test_a_map_of_wide_fields_keeps_its_ids_and_shortens_as_visitors_return(site, r):
    info = SiteInfo.from_model(site)
    wide = wide_map(r, info, [f"w{i}" for i in range(500)])
    new_before = r.bitcount(keys.new_visitors(site.pk, info.today()))
    record(r, info, hits([f"w{i}" for i in range(100)] + ["fresh"]), now=datetime.now(UTC))
    assert r.bitcount(keys.new_visitors(site.pk, info.today())) == new_before + 1  # only "fresh" is new
    stored = idmap.all_ids(r, site.pk)
    fields = sorted(len(f) for f in stored)
    assert fields.count(FIELD) == 101 and fields.count(WIDE) == 400  # the returning ones moved, same ids
    assert sorted(stored.values()) == list(range(501))
    was = {f[:FIELD]: i for f, i in wide.items()}
    assert all(was[f] == i for f, i in stored.items() if len(f) == FIELD and i < 500)


def test_the_migration_shortens_every_field_and_marks_the_map_narrow(site, r):
    from django.core.management import call_command

    info = SiteInfo.from_model(site)
    wide = wide_map(r, info, [f"w{i}" for i in range(3000)])
    call_command("migrate_visitor_ids", "example.com")
    assert idmap.all_ids(r, site.pk) == {f[:FIELD]: i for f, i in wide.items()}
    assert r.exists(keys.visitor_id_narrow(site.pk))
    record(r, info, hits(["w5", "w2999", "fresh"]), now=datetime.now(UTC))
    assert r.bitcount(keys.new_visitors(site.pk, info.today())) == 3001  # "fresh" only, on top
    assert idmap.all_ids(r, site.pk)[digest(info.salt, identity_source(None, "fresh", None, None))[:FIELD]] == 3000


def test_the_nightly_rollup_shortens_a_wide_map_once(site, r):
    from analytics.rollups.jobs import roll_closed

    info = SiteInfo.from_model(site)
    wide = wide_map(r, info, [f"w{i}" for i in range(700)])
    roll_closed(r, site)
    assert idmap.all_ids(r, site.pk) == {f[:FIELD]: i for f, i in wide.items()}
    assert r.exists(keys.visitor_id_narrow(site.pk))


def test_a_new_map_is_narrow_from_its_first_id(site, r):
    info = SiteInfo.from_model(site)
    assert not r.exists(keys.visitor_id_narrow(site.pk))
    record(r, info, hits(["a", "b"]), now=datetime.now(UTC))
    assert r.exists(keys.visitor_id_narrow(site.pk))
