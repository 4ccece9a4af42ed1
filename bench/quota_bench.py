"""Memory per site-day under a flood of distinct paths, with and without the daily quota.

100,000 events on one day, each on a path never seen before (what an attacker sending
random paths, or a site with unbounded URLs, produces), once with the default quota of
10,000 distinct pages a day and once with no effective quota. For each: Redis memory
added by ingestion (INFO used_memory), keys, and then the day's rollup (time and the
memory its week/month page merges add).
"""
import random
import time
from datetime import UTC, datetime

from analytics import rollups
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import Site
from analytics.sites import SiteInfo

EVENTS = 100_000
BATCH = 1000


def _used(r) -> int:
    return r.info("memory")["used_memory"]


def _one(r, quota: int, say) -> tuple:
    r.execute_command("FLUSHALL", "SYNC")
    Site.objects.filter(domain="quota.example").delete()
    site = Site.objects.create(domain="quota.example", max_pages_per_day=quota)
    info = SiteInfo.from_model(site)
    rng = random.Random(1)
    now = datetime.now(UTC)
    before = _used(r)
    for start in range(0, EVENTS, BATCH):
        hits = [
            Hit(None, f"/random/{rng.getrandbits(48):012x}", "pageview", identity_source(None, f"v{rng.randrange(20_000)}", None, None))
            for _ in range(BATCH)
        ]
        record(r, info, hits, now=now)
    ingested = _used(r) - before
    keys = r.dbsize()
    say(f"quota {quota:,}: {ingested / 1e6:.1f} MB after ingest; rolling the day up")
    started = time.perf_counter()
    rollups.rollup(r, site, info.today(), info.today())
    seconds = time.perf_counter() - started
    after_rollup = _used(r) - before
    return ingested, keys, seconds, after_rollup


def run(r, say) -> list[tuple]:
    rows = []
    for label, quota in (("capped: 10,000 pages a day (default)", 10_000), ("uncapped", 10_000_000)):
        ingested, keys, seconds, after_rollup = _one(r, quota, say)
        rows.append((label, f"{ingested / 1e6:.1f}", f"{ingested / EVENTS:,.0f}", f"{keys:,}", f"{seconds:.1f}", f"{after_rollup / 1e6:.1f}"))
    r.execute_command("FLUSHALL", "SYNC")
    return rows
