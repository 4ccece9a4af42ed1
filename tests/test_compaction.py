"""Bitmap compaction (analytics/rollups/compaction.py): a day's bitmaps give back the room
they reserved while growing, and not one bit changes."""

import random
from datetime import UTC, datetime, timedelta

from analytics.ingest import Hit, record
from analytics.management.commands.demo import People
from analytics.rollups.compaction import MIN_SLACK_BYTES, MIN_SLACK_SHARE, compact_days
from analytics.rollups.jobs import rollup
from analytics.sites import SiteInfo
from analytics.store import keys
from analytics.store.cluster import site_client


def day_of_new_visitors(r, site, n: int, days_ago: int = 0):
    """n new visitors on a day, one pageview each, with the demo's realistic visit
    dimensions (so the day gets filter bitmaps of its top sources, browsers, countries...)."""
    info = SiteInfo.from_model(site)
    rng = random.Random(5)
    crowd = People(rng)
    now = datetime.now(UTC)
    day = info.today() - timedelta(days=days_ago)
    noon = datetime.combine(day, datetime.min.time(), tzinfo=info.tz).replace(hour=12)
    start = min(now, noon) if days_ago else now
    span = max(0, min(n, (start - noon.replace(hour=0)).total_seconds() - 1))  # (within the day, whatever the hour)
    hits = []
    for i in range(n):
        person = crowd.new()
        hits.append(
            Hit(
                start - timedelta(seconds=(n - i) * span / n),
                f"/p{i % 20}",
                "pageview",
                person[0],
                attrs=crowd.visit(person, "/"),
            )
        )
    for at in range(0, n, 1000):
        record(r, info, hits[at : at + 1000], now=now)
    return day


def bitmaps(r, site, day) -> list[str]:
    fields = sorted(f.decode() for f in r.smembers(keys.dimension_bitmapped(site.pk, day)))
    return [
        keys.active(site.pk, day),
        keys.new_visitors(site.pk, day),
        *(keys.dimension_bitmap(site.pk, day, f) for f in fields),
    ]


def worth_a_copy(value: bytes, used: int) -> bool:
    """compact.lua's rule, the slow way."""
    slack = used - len(value)
    return slack >= MIN_SLACK_BYTES and slack >= MIN_SLACK_SHARE * len(value)


def test_a_days_bitmaps_shrink_to_their_length_and_keep_every_bit(site, r):
    """Valkey reserves room ahead of a growing bitmap (up to its length again), so some of
    the day's bitmaps are worth a copy there; Redis 8.2 grows them to little more than
    their length (measured: 2,500 bytes held in ~3,130), and there is nothing to copy."""
    day = day_of_new_visitors(r, site, 20_000)
    names = bitmaps(r, site, day)
    assert len(names) > 20
    r.expire(names[0], 3600)
    node = site_client(r, site.pk)
    before = {name: (r.get(name), node.memory_usage(name, samples=0)) for name in names}
    worth = [name for name, (value, used) in before.items() if worth_a_copy(value, used)]
    if node.info("server").get("server_name") == "valkey":
        assert worth  # (24 of the 97, measured)
    copied, freed = compact_days(r, site.pk, [day])
    assert copied == len(worth) and (freed > 0) == bool(worth)
    for name in names:
        value, used = before[name]
        assert r.get(name) == value  # every bit as it was
        after = node.memory_usage(name, samples=0)
        assert after <= used
        assert (
            after - len(value) < max(MIN_SLACK_BYTES, MIN_SLACK_SHARE * len(value)) + 64
        )  # (what is left: under the threshold)
    assert freed == sum(used for _, used in before.values()) - sum(node.memory_usage(n, samples=0) for n in names)
    assert 3500 < r.ttl(names[0]) <= 3600  # the TTL kept
    assert compact_days(r, site.pk, [day]) == (0, 0)  # nothing left worth a copy


def test_the_rollup_compacts_the_closed_days_it_rolls_and_counts_stay_exact(site, r):
    day = day_of_new_visitors(r, site, 12_000, days_ago=1)
    today = day_of_new_visitors(r, site, 12_000)
    names = bitmaps(r, site, day)
    counts = {name: r.bitcount(name) for name in names}
    node = site_client(r, site.pk)
    before = {n: (r.get(n), node.memory_usage(n, samples=0)) for n in names}
    used = sum(u for _, u in before.values())
    rollup(r, site, day, today)
    assert {name: r.bitcount(name) for name in names} == counts
    after = sum(node.memory_usage(n, samples=0) for n in names)
    assert after < used if any(worth_a_copy(*b) for b in before.values()) else after == used
    assert compact_days(r, site.pk, [day]) == (0, 0)  # the rollup did it
    assert compact_days(r, site.pk, [today])[0] > 0  # (not today's: they would grow their slack back)
