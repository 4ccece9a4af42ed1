"""`make bench` (BENCH_ONLY=size): the write path and memory against the site's size, as a
curve (issue 38: "no slowdown with size: events/s on a site with 10 million visitors-ever
within 10% of an empty site's").

What grows with the visitors a site has ever seen is what their dense ids live in: the
stable id map (lib/idmap.lua, ~11 bytes a visitor), the first days (lib/firstdays.lua),
and every day bitmap, which is as long as the highest id it holds. So each point of the
curve is a site whose map already holds `ever` visitors, seeded through the map's own
code (lib/idmap.lua's grow and put, the calls record_batch.lua makes for new visitors,
in calls of SEED_CALL visitors, their first day long before the stream), and then the
same stream of the peers section (bench/peers/stream.py: sessions, sources, countries,
devices, goals) posted through the batch API in this process (Django's test client:
parsing, enrichment, the ingest script; no network). Its visitors are new to the site, so
they get ids after the seeded ones, as a big site's newcomers do; a big site's returning
visitors have ids anywhere below, which makes their bitmaps no longer than these.

Each row: events/s of the stream, the server's CPU an event (INFO), and memory, the
site's whole (the seeded map included) and the stream's own, by event: what its days
added, with the day bitmaps apart. The empty site is measured first and last: the
difference between the two is this machine's noise at that moment.
"""

import os
import random
import time
from datetime import UTC, datetime, timedelta

SIZES = tuple(int(x) for x in os.environ.get("BENCH_SIZE_EVER", "0,1000000,10000000,0").split(","))
EVENTS = int(os.environ.get("BENCH_SIZE_EVENTS", "200000"))
DAYS = int(os.environ.get("BENCH_SIZE_DAYS", "7"))
SEED_CALL = 1_000_000  # visitors a seeding call adds (one call holds the server ~15 s: each rewrites every bucket)
DIGEST = 16  # bytes of a visitor digest (analytics/ingest/identity.py DIGEST_SIZE)

# The seeding script: the map's own functions, as record_batch.lua calls them for new
# visitors. KEYS: the map's base, the id counter, the first days' base; ARGV: the digests
# (DIGEST bytes each, in one string), the day number they were first seen.
SEED = (
    f"local DIGEST = {DIGEST}\n"
    + """
local packed, day = ARGV[1], tonumber(ARGV[2])
local m = #packed / DIGEST
local first = redis.call('INCRBY', KEYS[2], m) - m
local shape = idmap.shape(KEYS[1])
local entries = {}
for j = 1, m do entries[j] = {string.sub(packed, DIGEST * j - DIGEST + 1, DIGEST * j), first + j - 1} end
idmap.started(shape, first)
idmap.grow(shape, first + m - 1)
idmap.put(shape, entries)
firstdays.handed(KEYS[3], first, day)
entries = nil
collectgarbage('collect')  -- (the server's one Lua heap: the ingest script's collector would find this call's tables)
return first + m
"""
)


def seed(r, site_id: int, ever: int, first_day: datetime) -> float:
    """Hand out `ever` ids of random visitors through the map's own code; seconds it took."""
    import redis

    from analytics.periods import day_number
    from analytics.store import keys
    from analytics.store.scripts import Script

    pool = getattr(r, "connection_pool", None)  # (the same server, no socket timeout: a call takes seconds;
    if pool is not None:  # a cluster's client, in the tests, keeps its own: small calls)
        r = redis.Redis(
            connection_pool=redis.ConnectionPool(
                connection_class=pool.connection_class, **{**pool.connection_kwargs, "socket_timeout": None}
            )
        )
    script = Script("seed_idmap", libs=("idmap", "firstdays"), body=SEED)
    rng = random.Random(ever)
    day = day_number(first_day.date())
    start = time.perf_counter()
    for done in range(0, ever, SEED_CALL):
        m = min(SEED_CALL, ever - done)
        script.run(
            r,
            [keys.visitor_ids(site_id), keys.visitor_id_counter(site_id), keys.first_days(site_id)],
            [rng.randbytes(DIGEST * m), day],
        )
    return time.perf_counter() - start


def _bitmap_bytes(r, site_id: int) -> int:
    """MEMORY USAGE of the site's day bitmaps of dimension values (dim:<day>:b:*)."""
    from analytics.store import keys

    total = 0
    pattern = keys.dimensions_prefix(site_id) + "*:b:*"
    for name in r.scan_iter(match=pattern, count=1000):
        total += r.memory_usage(name, samples=0) or 0
    return total


def _cpu(r) -> float:
    cpu = r.info("cpu")
    return cpu["used_cpu_sys"] + cpu["used_cpu_user"]


def run(r, say) -> list[tuple]:
    import orjson
    from django.test import Client

    from analytics.models import Site
    from analytics.store import connection
    from bench.peers import stream
    from bench.peers.tally import prepare_site
    from bench.peers.truth import FUNNEL

    connection.reset()
    last_day = datetime.now(UTC).date() - timedelta(days=1)
    bodies = [orjson.dumps(batch) for batch in stream.batches(EVENTS, days=DAYS, last_day=last_day)]
    rows, empty = [], None
    for ever in (None, *SIZES):  # (None: the stream once into an empty site first, not shown: every run after
        # it finds this process's caches as warm, the User-Agents parsed and the addresses' countries looked up)
        r.execute_command("FLUSHALL", "SYNC")
        key = prepare_site(stream.DOMAIN, FUNNEL)
        site = Site.objects.get(domain=stream.DOMAIN)
        seeded = seed(r, site.pk, ever, datetime.now(UTC) - timedelta(days=DAYS + 30)) if ever else 0.0
        before_memory, before_cpu = r.info("memory")["used_memory"], _cpu(r)
        say(
            f"size: {ever or 0:,} visitors-ever{' (a warm-up)' if ever is None else ''} (seeded in {seeded:.1f} s), "
            f"{EVENTS:,} events over {DAYS} days"
        )
        client = Client()
        start = time.perf_counter()
        for body in bodies:
            answer = client.post(
                "/api/v1/events", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
            )
            if answer.status_code != 200 or orjson.loads(answer.content)["rejected"]:
                raise RuntimeError(f"size: a batch was refused: {answer.content[:300]!r}")
        seconds = time.perf_counter() - start
        cpu = _cpu(r) - before_cpu
        after = r.info("memory")["used_memory"]
        bitmaps = _bitmap_bytes(r, site.pk)
        rate = EVENTS / seconds
        if ever is None:
            continue
        if ever == 0 and empty is None:
            empty = rate
        rows.append(
            (
                f"{ever:,}",
                f"{rate:,.0f}",
                f"{rate / empty:.2f}x" if empty else "",
                f"{1e6 * cpu / EVENTS:.0f}",
                f"{after / 2**20:,.0f}",
                f"{(after - before_memory) / EVENTS:,.0f}",
                f"{bitmaps / EVENTS:,.0f}",
            )
        )
    r.execute_command("FLUSHALL", "SYNC")
    return rows
