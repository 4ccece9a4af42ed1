"""Redis memory per site-day with every visit dimension: a 100,000-visitor day.

100,000 visitors of one day with the demo's realistic mixes (countries by address,
User-Agents, referrers and campaigns, screen widths), 1 to 6 pageviews a visit over a few
minutes, sent in time order in 1,000-event batches through ingest.record(). Memory by key
family is MEMORY USAGE per key (analytics.keyspace, as the admin shows it); the total is
INFO used_memory after minus before.
"""
import random
from datetime import UTC, datetime, time, timedelta

from analytics.ingest import Hit, record
from analytics.keyspace import memory_today
from analytics.models import Site
from analytics.sites import SiteInfo

VISITORS = 100_000
BATCH = 1000


def run(r, say) -> tuple[list[tuple], int, int]:
    from analytics.management.commands.demo import People, _pages

    r.flushall()
    Site.objects.filter(domain="dimensions.example").delete()
    site = Site.objects.create(domain="dimensions.example")
    info = SiteInfo.from_model(site)
    rng = random.Random(12)
    crowd = People(rng)
    pages = _pages(rng)
    start = datetime.combine(info.today(), time(), tzinfo=info.tz)
    now = datetime.now(UTC)
    span = max(60, int((now - start).total_seconds()) - 600)
    say(f"dimensions: {VISITORS:,} visitors of today, realistic mixes")
    hits = []
    for _ in range(VISITORS):
        person = crowd.new()
        t = start + timedelta(seconds=rng.randrange(span))
        attrs = None
        for n in range(rng.randint(1, 6)):
            page = pages[min(int(len(pages) ** (rng.random() ** 1.3)) - 1, len(pages) - 1)]
            attrs = attrs or crowd.visit(person, page)
            hits.append(Hit((t + timedelta(seconds=40 * n)).astimezone(UTC), page, "pageview", person[0], attrs=attrs))
    hits.sort(key=lambda h: h.ts)
    before = r.info("memory")["used_memory"]
    for i in range(0, len(hits), BATCH):
        record(r, info, hits[i : i + BATCH], now=now)
    total = r.info("memory")["used_memory"] - before
    rows = [(family, f"{n:,}", f"{size / 1e6:.2f}", f"{size / VISITORS:,.1f}") for family, (n, size) in memory_today(r, info).items()]
    rows.append(("all (INFO used_memory)", f"{r.dbsize():,}", f"{total / 1e6:.2f}", f"{total / VISITORS:,.1f}"))
    return rows, len(hits), VISITORS
