"""New visitors follow the first day seen, whatever the order the days arrive in."""
import random
from datetime import UTC, date, datetime, time, timedelta

from analytics import rollups
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import DailyMetrics
from analytics.sites import SiteInfo
from analytics.store import keys


def at(day):
    return datetime.combine(day, time(12), tzinfo=UTC)


def visits(day, numbers):
    return [Hit(at(day), "/", "pageview", identity_source(None, f"v{n}", None, None)) for n in numbers]


def new_on(r, site, day):
    return r.bitcount(keys.new_visitors(site.pk, day))


def test_a_backfill_of_an_earlier_day_moves_new_visitors_there(site, r):
    info = SiteInfo.from_model(site)
    today = info.today()
    d = today - timedelta(days=5)
    record(r, info, visits(d, range(500)))
    assert (new_on(r, site, d - timedelta(days=2)), new_on(r, site, d)) == (0, 500)
    r.delete(keys.dirty_days(site.pk))
    record(r, info, visits(d - timedelta(days=2), range(500)))  # the older day comes in late
    assert (new_on(r, site, d - timedelta(days=2)), new_on(r, site, d)) == (500, 0)
    assert r.smembers(keys.dirty_days(site.pk)) == {d.isoformat().encode(), (d - timedelta(days=2)).isoformat().encode()}
    record(r, info, visits(d - timedelta(days=1), range(500)))  # a day between changes nothing
    assert (new_on(r, site, d - timedelta(days=2)), new_on(r, site, d - timedelta(days=1)), new_on(r, site, d)) == (500, 0, 0)

    rollups.roll_recent(r, site)  # the dirty days are rolled again
    assert DailyMetrics.objects.get(site=site, date=d).new_visitors == 0
    assert DailyMetrics.objects.get(site=site, date=d - timedelta(days=2)).new_visitors == 500


def test_new_visitors_match_brute_force_for_days_arriving_in_any_order(site, r):
    info = SiteInfo.from_model(site)
    today = info.today()
    rng = random.Random(3)
    days = [today - timedelta(days=n) for n in range(20)]
    events = [(rng.choice(days), rng.randrange(600)) for _ in range(6000)]
    rng.shuffle(events)  # backfills, out of order, in batches
    for i in range(0, len(events), 800):
        chunk = events[i : i + 800]
        record(r, info, [Hit(at(day), "/", "pageview", identity_source(None, f"v{n}", None, None)) for day, n in chunk])
    first: dict[int, date] = {}
    for day, n in events:
        first[n] = min(first.get(n, day), day)
    for day in days:
        assert new_on(r, site, day) == sum(1 for f in first.values() if f == day), day


def test_it_names_older_days_right_across_leap_years_and_centuries(site, r):
    """record_batch.lua turns a day number back into an ISO date to name the older day's
    bitmap: check it on the calendar's awkward days."""
    info = SiteInfo.from_model(site)
    awkward = [date(2000, 1, 1), date(2000, 2, 29), date(2000, 3, 1), date(2004, 12, 31), date(2023, 2, 28),
               date(2024, 2, 29), date(2024, 3, 1), date(2099, 12, 31), date(2100, 3, 1)]
    awkward = [d for d in awkward if d <= info.today()]
    later = info.today()
    for n, day in enumerate(awkward):
        record(r, info, visits(later, [f"x{n}"]))
        record(r, info, visits(day, [f"x{n}"]))
        assert new_on(r, site, day) == 1, day
    assert new_on(r, site, later) == 0


def test_new_visitors_match_brute_force_across_chunks_of_first_days(site, r):
    """Ids past FIRST_DAYS_CHUNK keep their first days in the next chunks."""
    info = SiteInfo.from_model(site)
    today = info.today()
    rng = random.Random(5)
    days = [today - timedelta(days=n) for n in range(6)]
    events = [(rng.choice(days), rng.randrange(10_000)) for _ in range(30_000)]
    for i in range(0, len(events), 1000):
        record(r, info, [Hit(at(day), "/", "pageview", identity_source(None, f"v{n}", None, None)) for day, n in events[i : i + 1000]])
    first: dict[int, date] = {}
    for day, n in events:
        first[n] = min(first.get(n, day), day)
    for day in days:
        assert new_on(r, site, day) == sum(1 for f in first.values() if f == day), day


def first_days_of(r, site, ids: int) -> list[int]:
    pipe = r.pipeline(transaction=False)
    for c in range(-(-ids // keys.FIRST_DAYS_CHUNK)):
        pipe.get(keys.first_days_chunk(site.pk, c))
    whole = b"".join(pipe.execute())
    return [int.from_bytes(whole[2 * i : 2 * i + 2], "big") for i in range(ids)]


def day_number(day: date) -> int:
    return (day - date(2000, 1, 1)).days


def test_first_days_sit_in_chunks_made_at_their_whole_length(site, r):
    info = SiteInfo.from_model(site)
    record(r, info, visits(info.today(), range(9000)))
    assert first_days_of(r, site, 9000) == [day_number(info.today())] * 9000
    for c in range(3):
        name = keys.first_days_chunk(site.pk, c)
        assert r.strlen(name) == 2 * keys.FIRST_DAYS_CHUNK
        assert r.memory_usage(name, samples=0) < 1.1 * 2 * keys.FIRST_DAYS_CHUNK  # (made whole: no room to grow, one size class)
    assert not r.exists(keys.first_days_chunk(site.pk, 3))  # (9,000 ids: three chunks)


def test_first_days_kept_as_one_string_move_into_chunks(site, r):
    """An earlier version kept every first day in one string: the first call that finds
    it moves it, and backfills read the days it held."""
    info = SiteInfo.from_model(site)
    today = info.today()
    record(r, info, visits(today, range(5000)))
    whole = first_days_of(r, site, 5000)
    r.delete(*(keys.first_days_chunk(site.pk, c) for c in range(2)))
    r.set(keys.first_days(site.pk), b"".join(d.to_bytes(2, "big") for d in whole))  # (as it was kept)
    yesterday = today - timedelta(days=1)
    record(r, info, visits(yesterday, range(3900, 4100)))  # (ids on both sides of the first chunk's end)
    assert not r.exists(keys.first_days(site.pk))
    assert (new_on(r, site, yesterday), new_on(r, site, today)) == (200, 4800)
    assert first_days_of(r, site, 5000) == [day_number(today)] * 3900 + [day_number(yesterday)] * 200 + [day_number(today)] * 900
