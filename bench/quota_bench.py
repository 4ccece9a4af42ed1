"""Memory per site-day under a flood of distinct paths, with and without the daily quota;
and the worst case an anonymous event can cost (worst_case()).

100,000 events on one day, each on a path never seen before (what an attacker sending
random paths, or a site with unbounded URLs, produces), once with the default quota of
10,000 distinct pages a day and once with no effective quota. For each: Redis memory
added by ingestion (INFO used_memory), keys, and then the day's rollup (time and the
memory its week/month page merges add).
"""

import os
import random
import time
from datetime import UTC, datetime

from analytics import rollups
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import Site
from analytics.sites import SiteInfo
from tests.junk import flood, used_memory

EVENTS = 100_000
BATCH = 1000


def _one(r, quota: int, say) -> tuple:
    r.execute_command("FLUSHALL", "SYNC")
    Site.objects.filter(domain="quota.example").delete()
    site = Site.objects.create(domain="quota.example", max_pages_per_day=quota)
    info = SiteInfo.from_model(site)
    rng = random.Random(1)
    now = datetime.now(UTC)
    before = used_memory(r)
    for _start in range(0, EVENTS, BATCH):
        hits = [
            Hit(
                None,
                f"/random/{rng.getrandbits(48):012x}",
                "pageview",
                identity_source(None, f"v{rng.randrange(20_000)}", None, None),
            )
            for _ in range(BATCH)
        ]
        record(r, info, hits, now=now)
    ingested = used_memory(r) - before
    keys = r.dbsize()
    say(f"quota {quota:,}: {ingested / 1e6:.1f} MB after ingest; rolling the day up")
    started = time.perf_counter()
    rollups.rollup(r, site, info.today(), info.today())
    seconds = time.perf_counter() - started
    after_rollup = used_memory(r) - before
    return ingested, keys, seconds, after_rollup


def run(r, say) -> list[tuple]:
    rows = []
    for label, quota in (("capped: 10,000 pages a day (default)", 10_000), ("uncapped", 10_000_000)):
        ingested, keys, seconds, after_rollup = _one(r, quota, say)
        rows.append(
            (
                label,
                f"{ingested / 1e6:.1f}",
                f"{ingested / EVENTS:,.0f}",
                f"{keys:,}",
                f"{seconds:.1f}",
                f"{after_rollup / 1e6:.1f}",
            )
        )
    r.execute_command("FLUSHALL", "SYNC")
    return rows


JUNK_EVENTS = int(os.environ.get("BENCH_JUNK_EVENTS", "100000"))  # (the audit sent 100,000)


def worst_case(r, say) -> list[tuple]:
    """What one anonymous event can cost at most: JUNK_EVENTS events with random everything
    the public controls (path, referrer and UTM tags, screen, event name, ten custom
    properties of random names and values, a new visitor each), on one day, through
    ingest as the endpoints call it, then the day's rollup; then as many again on the same
    day. The caps (pages, event names, values per dimension, property names and values)
    bound the rest: the second flood adds what each new visitor keeps (an id, its bits),
    not its junk, and no stored row. Measured after ingest, once the open visits are gone
    (as their expiry will do), and after the rollup (rows in the database)."""
    from analytics.models import DimensionDaily, EventDaily, PageDaily

    r.execute_command("FLUSHALL", "SYNC")
    Site.objects.filter(domain="junk.example").delete()
    site = Site.objects.create(domain="junk.example")
    info = SiteInfo.from_model(site)
    rng = random.Random(2)
    now = datetime.now(UTC)
    from analytics.store import keys as key_names

    rows, base = [], used_memory(r)
    for label in ("first", "second, same day"):
        before = used_memory(r)
        flood(r, info, rng, JUNK_EVENTS, now)
        ingested = used_memory(r) - before
        keys = r.dbsize()
        r.delete(
            *r.scan_iter(match=key_names.site_prefix(site.pk) + "*sess*", count=1000)
        )  # (as their expiry will, 1.5 h on)
        kept = used_memory(r) - before
        say(
            f"worst case, {label} flood: {ingested / JUNK_EVENTS:,.0f} B an event after ingest, {kept / JUNK_EVENTS:,.0f} B once "
            "the open visits are gone; rolling the day up"
        )
        started = time.perf_counter()
        rollups.rollup(r, site, info.today(), info.today())
        seconds = time.perf_counter() - started
        stored = sum(model.objects.filter(site=site).count() for model in (EventDaily, PageDaily, DimensionDaily))
        rows.append(
            (
                f"{JUNK_EVENTS:,} anonymous events, everything random ({label})",
                f"{ingested / 1e6:.1f}",
                f"{ingested / JUNK_EVENTS:,.0f}",
                f"{kept / JUNK_EVENTS:,.0f}",
                f"{(used_memory(r) - base) / 1e6:.1f}",
                f"{keys:,}",
                f"{seconds:.1f}",
                f"{stored:,}",
            )
        )
    r.execute_command("FLUSHALL", "SYNC")
    return rows
