"""The nightly rollup of a large site, beside the raw Redis commands it is made of.

Synthetic site: 1,000,000 visitors over 35 days, with realistic overlap: 100,000 regulars
each active on about half the days, and casual visitors drawn from the other 900,000 at
about 6% a day (so most of them come once or twice), with the "new" bitmaps derived
exactly (first day each id is seen). Site HLLs per day are dense; 50 pages per day.

Measured: `rollups.rollup()` of yesterday, as the nightly job runs it (WAU/MAU, week and
month PFMERGE, week unions, 31 day cohorts and 13 week cohorts recomputed), with the peak
of Redis's used memory above the data set while it ran; and the same kinds of commands
issued directly: one BITOP OR of 30 keys, the same in chunks of 16, BITOP AND + BITCOUNT,
PFMERGE of 30 day HLLs.
"""

import random
import threading
import time
from datetime import timedelta

from analytics import rollups
from analytics.store import keys
from analytics.store.scratch import queue_union

VISITORS = 1_000_000
DAYS = 35
BITMAP_BYTES = VISITORS // 8


def _random_mask(rng: random.Random, density_shift: int) -> int:
    """A random VISITORS-bit integer whose bits are set with probability 2**-density_shift."""
    mask = rng.getrandbits(VISITORS)
    for _ in range(density_shift - 1):
        mask &= rng.getrandbits(VISITORS)
    return mask


def load(r, site_id: int, today, say):
    rng = random.Random(42)
    regulars = (1 << 100_000) - 1
    casual = ((1 << VISITORS) - 1) ^ regulars
    seen = 0
    say(f"rollup bench: loading {DAYS} days of bitmaps for {VISITORS:,} visitors")
    for offset in range(DAYS, 0, -1):
        day = today - timedelta(days=offset)
        active = (_random_mask(rng, 1) & regulars) | (_random_mask(rng, 4) & casual)
        new = active & ~seen
        seen |= active
        pipe = r.pipeline(transaction=False)
        pipe.set(keys.active(site_id, day), active.to_bytes(BITMAP_BYTES, "big"))
        pipe.set(keys.new_visitors(site_id, day), new.to_bytes(BITMAP_BYTES, "big"))
        members = [b"v%d" % rng.randrange(VISITORS) for _ in range(20_000)]
        pipe.pfadd(keys.site_visitors(site_id, day), *members)
        pipe.set(keys.pageviews(site_id, day), 300_000)
        pipe.sadd(keys.pages_index(site_id, day), *(f"/p{n}" for n in range(50)))
        for n in range(50):
            pipe.pfadd(keys.page_visitors(site_id, day, f"/p{n}"), *members[n * 100 : n * 100 + 100])
            pipe.set(keys.page_pageviews(site_id, day, f"/p{n}"), 1000)
        pipe.execute()


def _peak_while(r, fn):
    """Run fn() while sampling Redis's used_memory; returns (seconds, peak bytes over the start)."""
    base = r.info("memory")["used_memory"]
    peak = [base]
    done = threading.Event()

    def sample():
        from redis import Redis

        probe = Redis(connection_pool=r.connection_pool)
        while not done.is_set():
            peak[0] = max(peak[0], probe.info("memory")["used_memory"])
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    done.set()
    sampler.join()
    return elapsed, peak[0] - base


def _timed(fn, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(r, site, say) -> list[tuple]:
    from analytics.sites import SiteInfo

    info = SiteInfo.from_model(site)
    today = info.today()
    yesterday = today - timedelta(days=1)
    load(r, site.pk, today, say)
    say("rollup bench: nightly rollup of yesterday")
    elapsed, peak = _peak_while(r, lambda: rollups.rollup(r, site, yesterday, yesterday, today=today))
    second, _ = _peak_while(r, lambda: rollups.rollup(r, site, yesterday, yesterday, today=today))

    sid = site.pk
    month = [keys.active(sid, yesterday - timedelta(days=n)) for n in range(30)]
    hlls = [keys.site_visitors(sid, yesterday - timedelta(days=n)) for n in range(30)]

    def or_whole():
        r.bitop("OR", f"bench:{{{sid}}}:or", *month)

    def or_chunked():
        pipe = r.pipeline(transaction=False)
        queue_union(pipe, f"bench:{{{sid}}}:or", month)
        pipe.execute()

    def and_count():
        pipe = r.pipeline(transaction=False)
        pipe.bitop("AND", f"bench:{{{sid}}}:and", keys.new_visitors(sid, yesterday - timedelta(days=30)), month[0])
        pipe.bitcount(f"bench:{{{sid}}}:and")
        pipe.execute()

    def pfmerge():
        r.pfmerge(f"bench:{{{sid}}}:hll", *hlls)

    raw = {
        "BITOP OR, 30 keys at once": _timed(or_whole),
        "BITOP OR, 30 keys in chunks of 16": _timed(or_chunked),
        "BITOP AND + BITCOUNT": _timed(and_count, 20),
        "PFMERGE, 30 day HLLs": _timed(pfmerge),
    }
    r.unlink(f"bench:{{{sid}}}:or", f"bench:{{{sid}}}:and", f"bench:{{{sid}}}:hll")
    # What the nightly rollup issues, priced at the raw figures above: 1 WAU + 1 MAU OR,
    # 26 week-union ORs of 7 keys (priced as a chunked 30-key OR / 4), ~500 day-cohort and
    # ~90 week-cohort AND+BITCOUNTs, 2 period PFMERGEs.
    floor = (
        2 * raw["BITOP OR, 30 keys in chunks of 16"]
        + 26 * raw["BITOP OR, 30 keys in chunks of 16"] / 4
        + (31 * 32 / 2 + 13 * 14 / 2) * raw["BITOP AND + BITCOUNT"]
        + 2 * raw["PFMERGE, 30 day HLLs"]
    )
    rows = [
        ("Tally nightly rollup of yesterday (1st run)", f"{elapsed * 1000:,.0f}", f"{peak / 1e6:,.1f}"),
        ("Tally nightly rollup of yesterday (re-run)", f"{second * 1000:,.0f}", ""),
        ("raw commands it is made of, priced from below", f"{floor * 1000:,.0f}", ""),
    ]
    rows += [(f"raw: {name}", f"{seconds * 1000:,.2f}", "") for name, seconds in raw.items()]
    return rows
