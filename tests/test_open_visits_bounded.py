"""What the open visits keep is bounded by the visits, not by the junk sent with them: a
flood of distinct long paths from a few visitors keeps a few parts per visit (its first 32
pages' among them), not one per path;
a backfill's visits that ended long before its newest event are not kept open. The
counts stay those of brute force (test_visits.py checks them in depth)."""
from datetime import UTC, datetime, timedelta

from analytics import dimensions
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.ingest.visit import visit_attrs
from analytics.sites import SiteInfo
from analytics.store import keys


def _open_state(r, site_id: int, now: datetime) -> tuple[int, int, int]:
    """(open visits, parts kept, their bytes) of the half hours a call reads."""
    generation = int(now.timestamp()) // dimensions.VISIT_TIMEOUT
    visits = sum(r.hlen(keys.sessions(site_id, g)) for g in (generation, generation - 1))
    names = [keys.session_parts(site_id, g) for g in (generation, generation - 1)]
    parts = sum(r.hlen(name) for name in names)
    size = sum(r.memory_usage(name) or 0 for name in names)
    return visits, parts, size


def test_a_flood_of_distinct_paths_keeps_a_part_per_visit_not_per_path(site, r):
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    hits = []
    for n in range(2000):  # 2,000 distinct 200-character paths from 20 visitors, in a minute
        visitor = n % 20
        hits.append(Hit(now - timedelta(seconds=60 - n * 0.03), f"/{n:05d}" + "x" * 194, "pageview",
                        identity_source(None, f"v{visitor}", None, None),
                        attrs=visit_attrs("example.com", "https://example.com/", "https://news.ycombinator.com/", "Mozilla/5.0 Firefox/130.0", None, 1280)))
    for i in range(0, len(hits), 250):
        record(r, info, hits[i : i + 250], now=now)
    visits, parts, size = _open_state(r, site.id, now)
    assert visits == 20
    # A visit's parts: source, device, location, screen, entry page, and the pages it viewed
    # up to lib/visits.lua's MAX_VISIT_PAGES (32), then "(other)": not one per path.
    assert parts <= 20 * (6 + 33), parts
    assert size < 20 * 33 * 300, size


def test_a_backfills_visits_that_ended_long_before_its_newest_event_are_not_kept_open(site, r):
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    yesterday = now - timedelta(days=1)
    hits = [Hit(yesterday + timedelta(minutes=n), "/", "pageview", identity_source(None, f"old{n}", None, None)) for n in range(50)]
    hits.append(Hit(yesterday + timedelta(hours=5), "/late", "pageview", identity_source(None, "late", None, None)))
    record(r, info, hits, now=now)
    visits, _, _ = _open_state(r, site.id, now)
    assert visits == 1  # (the last visitor's: within the timeout of the call's newest event)
    day = yesterday.astimezone(info.tz).date()
    total = r.hget(keys.dimension_counts(site.id, day), dimensions.TOTAL)
    counts = dict(zip(dimensions.TABLES, dimensions.COUNTS.unpack_from(total)))
    assert (counts["visits"], counts["pageviews"], counts["bounces"]) == (51, 51, 51)
