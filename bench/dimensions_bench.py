"""Redis memory per site-day with every visit dimension, and the memory model built on it.

A day of V visitors (10,000, 100,000 and 1,000,000 by default; BENCH_MEMORY_VISITORS
changes the list) with the demo's realistic mixes (countries by address,
User-Agents, referrers and campaigns, screen widths), 1 to 6 pageviews a visit over a few
minutes, sent in time order in 1,000-event batches through ingest.record(). Memory by key
family is MEMORY USAGE per key (analytics.keyspace, as the admin shows it), once the day's
bitmaps are compacted as the rollups leave a closed day (rollups/compaction.py); the totals are
INFO used_memory after minus before, as ingested, compacted, and once the open visits are
gone (deleted, as their expiry will).

The model (model()) adds a site-year with the expiry policy's defaults: a day's keys are
kept 400 days, so a year holds 365 such days, plus the visitor-id map of everyone seen
that year (counted here as if each day's visitors were all new: an upper bound), less
the open visits (they expire 1.5 hours after a visit's last event).
"""

import os
from datetime import UTC, datetime, time
from time import perf_counter, sleep

from analytics.counts import fold
from analytics.ingest import record
from analytics.keyspace import memory_today
from analytics.models import Site
from analytics.rollups.compaction import compact_days
from analytics.sites import SiteInfo
from analytics.store import keys
from analytics.store.scripts import RECORD_BATCH

VISITORS = 100_000
SIZES = [int(n) for n in os.environ.get("BENCH_MEMORY_VISITORS", "10000,100000,1000000").split(",") if n.strip()]
BATCH = 1000


def run(r, say, visitors: int = VISITORS) -> tuple[list[tuple], int, int]:
    from analytics.management.commands.demo import new_visitors_day

    r.execute_command("FLUSHALL", "SYNC")
    Site.objects.filter(domain="dimensions.example").delete()
    site = Site.objects.create(domain="dimensions.example")
    if os.environ.get("BENCH_SEGMENT_VALUES"):  # (e.g. 0: the day without filter bitmaps)
        site.segment_values = int(os.environ["BENCH_SEGMENT_VALUES"])
        site.save()
    info = SiteInfo.from_model(site)
    start = datetime.combine(info.today(), time(), tzinfo=info.tz)
    now = datetime.now(UTC)
    span = max(60, int((now - start).total_seconds()) - 600)
    say(f"dimensions: {visitors:,} visitors of today, realistic mixes")
    hits = new_visitors_day(12, start, span, visitors)
    # A warm-up, flushed: the server keeps ~1 MB it allocates in the first calls (the
    # script's cache, Lua's heap, client buffers) after a FLUSHALL, whatever the day's
    # size: the site's visitors are not charged for it.
    for i in range(0, min(len(hits), 20 * BATCH), BATCH):
        record(r, info, hits[i : i + BATCH], now=now)
    r.execute_command("FLUSHALL", "SYNC")  # (SYNC: Valkey frees a plain FLUSHALL's keys in the background, and
    r.script_load(RECORD_BATCH.source)  # a baseline read meanwhile would still hold the warm-up's)
    before = r.info("memory")["used_memory"]
    for i in range(0, len(hits), BATCH):
        record(r, info, hits[i : i + BATCH], now=now)
    ingested = r.info("memory")["used_memory"] - before
    compact_days(r, site.pk, [info.today()])  # (what the rollups do to a closed day's bitmaps: rollups/compaction.py)
    total = r.info("memory")["used_memory"] - before
    families = memory_today(r, info)
    rows = [
        (family, f"{n:,}", f"{size / 1e6:.2f}", f"{size / visitors:,.1f}") for family, (n, size) in families.items()
    ]
    rows.append(
        (
            "all (INFO used_memory), as ingested",
            f"{r.dbsize():,}",
            f"{ingested / 1e6:.2f}",
            f"{ingested / visitors:,.1f}",
        )
    )
    rows.append(
        (
            "all, bitmaps compacted (as the rollups leave a closed day)",
            "",
            f"{total / 1e6:.2f}",
            f"{total / visitors:,.1f}",
        )
    )
    r.delete(*r.scan_iter(match=keys.site_prefix(site.pk) + "*sess*", count=1000))  # (as their expiry will)
    while r.info("memory").get("lazyfree_pending_objects", 0):
        sleep(0.05)
    kept = r.info("memory")["used_memory"] - before
    rows.append(
        ("all once the open visits are gone (they expire in 1.5 h)", "", f"{kept / 1e6:.2f}", f"{kept / visitors:,.1f}")
    )
    # The HLLs the values whose bitmap stood in for theirs get when their bitmaps are due
    # to expire (counts/fold.py): a day past keep_segment_days holds these instead.
    day = info.today()
    only = sorted(fold.bitmap_only(r, site.pk, [day])[day])
    began = perf_counter()
    fold.fold(r, site.pk, day, only)
    took = perf_counter() - began
    pipe = r.pipeline(transaction=False)
    for field in only:
        pipe.memory_usage(keys.dimension_visitors(site.pk, day, field), samples=0)
    folded = sum(n or 0 for n in pipe.execute())
    families[FOLDED] = (len(only), folded)
    rows.append(
        (
            f"{FOLDED} (not in the totals; folded in {took:.2f} s)",
            f"{len(only):,}",
            f"{folded / 1e6:.2f}",
            f"{folded / visitors:,.1f}",
        )
    )
    return rows, len(hits), visitors, families


OPEN_VISITS = "open visits (sessions, their parts)"
IDS = "visitor ids and first days (kept)"
FOLDED = "HLLs folded from bitmaps, once these are due to expire"


PAGES = "daily pages"
DENSE_HLL = 12_304  # bytes of a dense HyperLogLog (MEMORY USAGE)


def model(visitors: int, families: dict) -> tuple:
    """(daily visitors, MB a site-day keeps, MB of the id map for that day's visitors,
    GB a site-year holds with every day key kept 400 days, and GB with the default
    policy: day page HLLs kept 35 days, folded into week and month HLLs kept 400 days;
    filter bitmaps kept 90 days, then the values they stood in for get their HLLs back)
    from one measured day. A week's HLL of a page is counted as 7 of its days, a month's
    as 30, each at most a dense HLL: an upper bound (returning visitors make them smaller)."""
    day = sum(size for family, (_, size) in families.items() if family not in (OPEN_VISITS, IDS, FOLDED))
    ids = families[IDS][1]
    page_keys, pages = families[PAGES]
    per_page = pages / max(1, page_keys / 2)  # (a page's HLL and its counter)
    folds = (53 * min(7 * per_page, DENSE_HLL) + 13 * min(30 * per_page, DENSE_HLL)) * page_keys / 2
    bitmaps = families[BITMAPS][1]  # (kept SEGMENT_DAYS, not a year)
    hlls_back = families[FOLDED][1]  # (the days past SEGMENT_DAYS: their bitmap-only values' HLLs, folded)
    year_folded = (
        365 * (day - pages - bitmaps + ids)
        + 35 * pages
        + folds
        + SEGMENT_DAYS * bitmaps
        + (365 - SEGMENT_DAYS) * hlls_back
    )
    return (
        f"{visitors:,}",
        f"{day / 1e6:,.1f}",
        f"{ids / 1e6:,.1f}",
        f"{(365 * (day + ids)) / 1e9:,.2f}",
        f"{year_folded / 1e9:,.2f}",
    )


BITMAPS = "filter bitmaps (per value, for exact filters)"
EVER_SEEN = 10  # the model's site has seen this many times a day's visitors, ever
SEGMENT_DAYS = 90  # keep_segment_days' default


def segments_model(visitors: int, families: dict) -> tuple:
    """(daily visitors, filter bitmaps a day, MB measured (this day's visitors are ids
    0..V), bytes per visitor, MB a day and GB a site-year when the ids span EVER_SEEN x V,
    the worst case: a bitmap is as long as its highest id), kept SEGMENT_DAYS)."""
    n, size = families[BITMAPS]
    spread = n * EVER_SEEN * visitors / 8
    return (
        f"{visitors:,}",
        f"{n:,}",
        f"{size / 1e6:,.2f}",
        f"{size / visitors:,.1f}",
        f"{spread / 1e6:,.1f}",
        f"{SEGMENT_DAYS * spread / 1e9:,.2f}",
    )
