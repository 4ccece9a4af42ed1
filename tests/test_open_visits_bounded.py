"""What the open visits keep is bounded by the visits, not by the junk sent with them: a
flood of distinct long paths from a few visitors keeps a few parts per visit (its first 32
pages' among them), not one per path;
a backfill's visits that ended long before its newest event are not kept open. The
counts stay those of brute force (test_visits.py checks them in depth)."""

import random
from datetime import UTC, datetime, time, timedelta

from analytics import dimensions
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.ingest.visit import visit_attrs
from analytics.sites import SiteInfo
from analytics.store import keys
from tests.test_visits import COUNTRIES, NOW, attrs, brute_force, send, table


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
        hits.append(
            Hit(
                now - timedelta(seconds=60 - n * 0.03),
                f"/{n:05d}" + "x" * 194,
                "pageview",
                identity_source(None, f"v{visitor}", None, None),
                attrs=visit_attrs(
                    "example.com",
                    "https://example.com/",
                    "https://news.ycombinator.com/",
                    "Mozilla/5.0 Firefox/130.0",
                    None,
                    1280,
                ),
            )
        )
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
    # (2:00 yesterday, site time: the late event 5 h on stays on that day whatever the hour now)
    yesterday = datetime.combine(info.today() - timedelta(days=1), time(2), tzinfo=info.tz)
    hits = [
        Hit(yesterday + timedelta(minutes=n), "/", "pageview", identity_source(None, f"old{n}", None, None))
        for n in range(50)
    ]
    hits.append(Hit(yesterday + timedelta(hours=5), "/late", "pageview", identity_source(None, "late", None, None)))
    record(r, info, hits, now=now)
    visits, _, _ = _open_state(r, site.id, now)
    # (the last visitor's, within the timeout of the call's newest event, and those of its
    # first 30 minutes, within the timeout of its oldest: an earlier batch sent after this
    # one may lead into them; not the 19 between)
    assert visits == 1 + 31
    day = yesterday.astimezone(info.tz).date()
    total = r.hget(keys.dimension_counts(site.id, day), dimensions.TOTAL)
    counts = dict(zip(dimensions.TABLES, dimensions.COUNTS.unpack_from(total)))
    assert (counts["visits"], counts["pageviews"], counts["bounces"]) == (51, 51, 51)


def test_visits_under_values_past_the_quota_share_their_parts_and_count_like_brute_force(site, r):
    """400 visitors, each from a source of their own (a flood of made-up referrers), some
    across midnight: past the quota of 5 values a day, the open visits keep a handful of
    "(other)" parts, not one per source; every value kept counts as brute force says, and
    "(other)" holds the rest (a visit that crosses midnight under "(other)" stays there)."""
    site.max_property_values = 5  # (the values a visit dimension keeps a day)
    site.save()
    rng = random.Random(7)
    start = datetime(2026, 11, 20, 23, 40, tzinfo=UTC)
    events = []
    for v in range(400):
        t = start + timedelta(seconds=rng.randrange(1800))
        for _ in range(rng.randint(1, 4)):
            kind = rng.choices(["p", "i", "n"], weights=[8, 1, 1])[0]
            events.append((t, v, kind, "/", attrs(f"made-up-{v}.example", rng.choice(COUNTRIES))))
            t += timedelta(seconds=rng.choice([5, 60, 600]))
    events.sort(key=lambda e: (e[0], e[1]))
    send(r, site, events, 50)

    generation = int(NOW.timestamp()) // dimensions.VISIT_TIMEOUT
    parts = sum(r.hlen(keys.session_parts(site.id, g)) for g in (generation, generation - 1))
    assert parts <= 5 + 3 + 10, parts  # (5 sources kept, "(other)" with each country, the pages and entry pages)
    counts, _ = brute_force(events)
    for day, name in counts:
        got = table(r, site.id, day, name)
        want = counts[day, name]
        kept = {f for f in got if f.startswith("source\x1f") and f != "source\x1f(other)"}
        assert len(kept) <= 5
        for f in kept:
            assert got[f] == want[f], (day, name, f)
        everyone = sum(n for f, n in want.items() if f.startswith("source\x1f"))
        assert got.get("source\x1f(other)", 0) == everyone - sum(got[f] for f in kept), (day, name)
        assert got.get(dimensions.TOTAL, 0) == want.get(dimensions.TOTAL, 0), (day, name)

    # Rolled up, then the raw keys gone (the expiry policy): the same numbers from the rows.
    from analytics import queries
    from analytics.rollups import jobs

    info = SiteInfo.from_model(site)
    days = sorted({day for day, _ in counts})

    def by_source(day):
        result = queries.run(r, queries.Query(info, day, day, "breakdown", dimension="source", limit=100))
        return {row["source"]: (row["visitors"], row["visits"], row["pageviews"]) for row in result.rows}

    live = {day: by_source(day) for day in days}
    jobs.rollup(r, site, days[0], days[-1])
    for day in days:
        r.delete(*r.scan_iter(match=keys.site_pattern(site.id, f"*{day.isoformat()}*"), count=1000))
        assert by_source(day) == live[day], day
        visits = {source: n for source, (_, n, _) in live[day].items()}
        assert sum(visits.values()) == counts[day, "visits"][dimensions.TOTAL]  # (every visit under one source)
        for source in set(visits) - {"(other)"}:
            assert visits[source] == counts[day, "visits"][f"source\x1f{source}"]
