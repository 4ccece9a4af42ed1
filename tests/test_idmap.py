"""The stable visitor-id map in buckets (lib/idmap.lua): exact ids, packed string
buckets, bytes per visitor, and the maps of earlier layouts (one big hash; small hash
buckets keyed by 10 or 7 digest bytes) moved as their visitors return, or all at once."""

import random
from datetime import UTC, datetime

import pytest

from analytics.ingest import Hit, record
from analytics.ingest.identity import digest, identity_source
from analytics.sites import SiteInfo
from analytics.store import idmap, keys
from analytics.store.cluster import site_client
from analytics.store.idmap import FIELD, LOAD, WIDE
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
    assert int(r.get(keys.visitor_id_buckets(site.pk))) == -(-len(seen) // LOAD)


def test_the_buckets_are_packed_strings_within_the_byte_budget(site, r):
    info = SiteInfo.from_model(site)
    n = 30_000
    for start in range(0, n, 1000):
        record(r, info, hits(f"u{i}" for i in range(start, start + 1000)), now=datetime.now(UTC))
    names = idmap.bucket_keys(r, site.pk)
    pipe = r.pipeline(transaction=False)
    for name in names:
        pipe.type(name)
        pipe.get(name)
        pipe.memory_usage(name, samples=0)
    answers = pipe.execute()
    types, buckets, usage = set(answers[0::3]), answers[1::3], sum(answers[2::3])
    assert types == {b"string"}
    assert all(
        bucket[0] == 16 + 3 for bucket in buckets
    )  # (ids below 2^24 take 3 bytes; past 256 buckets, short fields)
    assert sum(len(idmap.unpack(bucket, k)) for k, bucket in enumerate(buckets)) == n
    assert usage / n <= 13, f"{usage / n:.1f} bytes per visitor"  # (measured ~10: 9-byte records, a share of the key)
    assert usage / n <= BUDGET


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
    names = [
        k
        for k in node.scan_iter(match=keys.site_prefix(site.pk) + "*", count=1000)
        if b":sess" not in k and b":pattern:" not in k  # (open visits; the rate screen's open windows)
    ]  # (open visits, open windows)
    total = sum(node.memory_usage(k, samples=0) or 0 for k in names)  # (0: gone since, like the live tick's key)
    assert total / n <= 32, f"{total / n:.1f} bytes per visitor"


def hash_map(r, info, names: list[str], width: int) -> dict[bytes, int]:
    """A map as the two versions before kept it: small hashes of `width` digest bytes
    (10, then 7) -> id, ids 0.. in the order of `names`, 48 to a bucket, no packed mark.
    Returns {the first FIELD digest bytes: id}."""
    digests = [digest(info.salt, identity_source(None, name, None, None)) for name in names]
    buckets = -(-len(names) // 48)
    pipe = r.pipeline(transaction=False)
    for id_, d in enumerate(digests):
        pipe.hset(keys.visitor_id_hash_bucket(info.id, idmap.bucket_of(d, buckets)), d[:width], id_)
    pipe.set(keys.visitor_id_buckets(info.id), buckets)
    pipe.set(keys.visitor_id_counter(info.id), len(names))
    if width == FIELD:
        pipe.set(keys.visitor_id_narrow(info.id), 1)
    pipe.execute()
    return {d[:FIELD]: id_ for id_, d in enumerate(digests)}


def field_of(info, name: str) -> bytes:
    return digest(info.salt, identity_source(None, name, None, None))[:FIELD]


@pytest.mark.parametrize("width", [WIDE, FIELD])
def test_a_map_of_hash_buckets_keeps_its_ids_and_packs_as_visitors_return(site, r, width):
    info = SiteInfo.from_model(site)
    before = hash_map(r, info, [f"w{i}" for i in range(500)], width)
    record(r, info, hits([f"w{i}" for i in range(100)] + ["fresh"]), now=datetime.now(UTC))
    assert r.bitcount(keys.new_visitors(site.pk, info.today())) == 1  # only "fresh" is new
    stored = idmap.all_ids(r, site.pk)
    assert {f[:FIELD]: i for f, i in stored.items()} == {**before, field_of(info, "fresh"): 500}  # same ids
    buckets = int(r.get(keys.visitor_id_buckets(site.pk)))
    touched = {idmap.bucket_of(field_of(info, f"w{i}"), buckets) for i in range(100)}
    assert all(r.type(keys.visitor_id_bucket(site.pk, n)) == b"string" for n in touched)  # moved whole
    assert not any(r.exists(keys.visitor_id_hash_bucket(site.pk, n)) for n in touched)
    assert not r.exists(keys.visitor_id_packed(site.pk))  # (the rest wait for a read, or the migration)


def test_the_migration_packs_every_bucket_and_marks_the_map(site, r):
    from django.core.management import call_command

    info = SiteInfo.from_model(site)
    before = hash_map(r, info, [f"w{i}" for i in range(3000)], WIDE)
    call_command("migrate_visitor_ids", "example.com")
    assert idmap.all_ids(r, site.pk) == before
    assert r.exists(keys.visitor_id_packed(site.pk)) and not r.exists(keys.visitor_id_narrow(site.pk))
    assert not any(r.exists(keys.visitor_id_hash_bucket(site.pk, n)) for n in range(3000 // 48 + 1))
    record(r, info, hits(["w5", "w2999", "fresh"]), now=datetime.now(UTC))
    assert r.bitcount(keys.new_visitors(site.pk, info.today())) == 1  # "fresh" only
    assert idmap.all_ids(r, site.pk)[field_of(info, "fresh")] == 3000


def test_the_nightly_rollup_packs_a_map_once(site, r):
    from analytics.rollups.jobs import roll_closed

    info = SiteInfo.from_model(site)
    before = hash_map(r, info, [f"w{i}" for i in range(700)], FIELD)
    roll_closed(r, site)
    assert idmap.all_ids(r, site.pk) == before
    assert r.exists(keys.visitor_id_packed(site.pk))


def test_a_new_map_is_packed_from_its_first_id(site, r):
    info = SiteInfo.from_model(site)
    assert not r.exists(keys.visitor_id_packed(site.pk))
    record(r, info, hits(["a", "b"]), now=datetime.now(UTC))
    assert r.exists(keys.visitor_id_packed(site.pk))


@pytest.mark.one_leg  # (the script's bucket widening: the same on every server)
def test_ids_past_three_bytes_widen_their_buckets_and_keep_the_rest(site, r):
    info = SiteInfo.from_model(site)
    start = 2**24 - 30
    r.set(keys.visitor_id_counter(site.pk), start)
    r.set(keys.visitor_id_buckets(site.pk), -(-start // LOAD))  # (a map of 16.7 million, its buckets empty but these)
    r.set(keys.visitor_id_packed(site.pk), 1)
    names = [f"x{i}" for i in range(60)]
    record(r, info, hits(names[:30]), now=datetime.now(UTC))  # ids below 2^24: 3 bytes
    record(r, info, hits(names[30:]), now=datetime.now(UTC))  # 2^24 on: their buckets take 4
    stored = idmap.all_ids(r, site.pk)
    assert sorted(stored.values()) == list(range(start, start + 60))
    record(r, info, hits(names), now=datetime.now(UTC))  # all found again: none new
    assert idmap.all_ids(r, site.pk) == stored
    assert r.bitcount(keys.new_visitors(site.pk, info.today())) == 60
    widths = {r.get(name)[0] % 16 for name in idmap.bucket_keys(r, site.pk) if r.exists(name)}
    assert widths == {3, 4}


def test_buckets_take_short_fields_past_256_buckets_and_every_visitor_keeps_their_id(site, r):
    """From 256 buckets on, a bucket's number gives its fields' fourth digest byte, and a
    bucket written again leaves it out: buckets of both kinds live side by side, and
    splits move short fields alike."""
    info = SiteInfo.from_model(site)
    rng = random.Random(8)
    seen: list[str] = []
    sizes = [1000] * 24 + [100] * 8  # (to 24,800 ids: the switch at 24,576, 257 buckets; then few writes)
    for size in sizes:
        fresh = [f"s{i}" for i in range(len(seen), len(seen) + size)]
        back = rng.sample(seen, min(len(seen), 300))
        record(r, info, hits(fresh + back), now=datetime.now(UTC))
        seen += fresh
    stored = idmap.all_ids(r, site.pk)
    assert set(stored) == {field_of(info, name) for name in seen} and sorted(stored.values()) == list(range(len(seen)))
    heads = {r.get(name)[0] for name in idmap.bucket_keys(r, site.pk)}
    assert heads == {3, 16 + 3}  # (some buckets not written since the switch)
    record(r, info, hits(seen), now=datetime.now(UTC))  # every one found again: none new
    assert r.bitcount(keys.new_visitors(site.pk, info.today())) == len(seen)
    assert idmap.all_ids(r, site.pk) == stored


def test_a_look_up_reads_whole_records_only(site, r):
    """A field's bytes may also occur across two records (the end of one field and the
    id beside it): only a match at a record's start is the visitor."""
    info = SiteInfo.from_model(site)
    field = field_of(info, "v")
    decoy = b"abc" + field[:4] + field[4:]  # (field starts at byte 3 of this record: 7 field bytes + a 3-byte id)
    bucket = bytes([3]) + decoy + field + (42).to_bytes(3, "big")
    r.set(keys.visitor_id_bucket(site.pk, 0), bucket)
    r.set(keys.visitor_id_counter(site.pk), 100)
    r.set(keys.visitor_id_packed(site.pk), 1)  # (one bucket: every digest falls in it)
    record(r, info, hits(["v"]), now=datetime.now(UTC))
    assert r.bitcount(keys.new_visitors(site.pk, info.today())) == 0  # found: not new
    assert r.getbit(keys.active(site.pk, info.today()), 42) == 1


def test_a_map_of_hash_buckets_past_256_packs_into_short_fields(site, r):
    from django.core.management import call_command

    info = SiteInfo.from_model(site)
    before = hash_map(r, info, [f"w{i}" for i in range(13_000)], FIELD)  # (271 buckets of 48)
    call_command("migrate_visitor_ids", "example.com")
    assert idmap.all_ids(r, site.pk) == before
    assert {r.get(name)[0] for name in idmap.bucket_keys(r, site.pk)} == {16 + 3}
    record(r, info, hits(["w7", "w12999", "fresh"]), now=datetime.now(UTC))
    assert r.bitcount(keys.new_visitors(site.pk, info.today())) == 1
