"""New visitors follow the first day seen, whatever the order the days arrive in."""

import random
from datetime import UTC, date, datetime, time, timedelta

import pytest

from analytics import rollups
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import DailyMetrics
from analytics.sites import SiteInfo
from analytics.store import firstdays, keys
from analytics.store.cluster import site_client


def at(day):
    return datetime.combine(day, time(12), tzinfo=UTC)


def visits(day, numbers):
    return [Hit(at(day), "/", "pageview", identity_source(None, f"v{n}", None, None)) for n in numbers]


def new_on(r, site, day):
    return r.bitcount(keys.new_visitors(site.pk, day))


def assert_new_visitors_as_brute_force(r, site, info, days, events: list[tuple[date, int]], batch: int):
    """Record (day, visitor number) events in batches of `batch`, in their order; each
    day's new visitors must be those whose earliest day it is."""
    for i in range(0, len(events), batch):
        record(r, info, visits_on(events[i : i + batch]))
    first: dict[int, date] = {}
    for day, n in events:
        first[n] = min(first.get(n, day), day)
    for day in days:
        assert new_on(r, site, day) == sum(1 for f in first.values() if f == day), day


def visits_on(events: list[tuple[date, int]]) -> list[Hit]:
    return [Hit(at(day), "/", "pageview", identity_source(None, f"v{n}", None, None)) for day, n in events]


def test_a_backfill_of_an_earlier_day_moves_new_visitors_there(site, r):
    info = SiteInfo.from_model(site)
    today = info.today()
    d = today - timedelta(days=5)
    record(r, info, visits(d, range(500)))
    assert (new_on(r, site, d - timedelta(days=2)), new_on(r, site, d)) == (0, 500)
    r.delete(keys.dirty_days(site.pk))
    record(r, info, visits(d - timedelta(days=2), range(500)))  # the older day comes in late
    assert (new_on(r, site, d - timedelta(days=2)), new_on(r, site, d)) == (500, 0)
    assert r.smembers(keys.dirty_days(site.pk)) == {
        d.isoformat().encode(),
        (d - timedelta(days=2)).isoformat().encode(),
    }
    record(r, info, visits(d - timedelta(days=1), range(500)))  # a day between changes nothing
    assert (new_on(r, site, d - timedelta(days=2)), new_on(r, site, d - timedelta(days=1)), new_on(r, site, d)) == (
        500,
        0,
        0,
    )

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
    assert_new_visitors_as_brute_force(r, site, info, days, events, 800)


def test_it_names_older_days_right_across_leap_years_and_centuries(site, r):
    """record_batch.lua turns a day number back into an ISO date to name the older day's
    bitmap: check it on the calendar's awkward days."""
    info = SiteInfo.from_model(site)
    awkward = [
        date(2000, 1, 1),
        date(2000, 2, 29),
        date(2000, 3, 1),
        date(2004, 12, 31),
        date(2023, 2, 28),
        date(2024, 2, 29),
        date(2024, 3, 1),
        date(2099, 12, 31),
        date(2100, 3, 1),
    ]
    awkward = [d for d in awkward if d <= info.today()]
    later = info.today()
    for n, day in enumerate(awkward):
        record(r, info, visits(later, [f"x{n}"]))
        record(r, info, visits(day, [f"x{n}"]))
        assert new_on(r, site, day) == 1, day
    assert new_on(r, site, later) == 0


def test_new_visitors_match_brute_force_for_many_visitors_and_runs(site, r):
    """10,000 visitors over 6 days in random order: many runs of ids, many moved."""
    info = SiteInfo.from_model(site)
    today = info.today()
    rng = random.Random(5)
    days = [today - timedelta(days=n) for n in range(6)]
    events = [(rng.choice(days), rng.randrange(10_000)) for _ in range(30_000)]
    assert_new_visitors_as_brute_force(r, site, info, days, events, 1000)


def day_number(day: date) -> int:
    return (day - date(2000, 1, 1)).days


def test_a_day_of_new_visitors_keeps_its_first_days_in_one_run(site, r):
    """First days cost no bytes per visitor: a run of ids per day (earlier versions kept
    2 bytes an id)."""
    info = SiteInfo.from_model(site)
    record(r, info, visits(info.today(), range(9000)))
    assert r.zrange(keys.first_days_runs(site.pk), 0, -1) == [f"0:{day_number(info.today())}".encode()]
    node = site_client(r, site.pk)
    assert not list(node.scan_iter(match=keys.first_days(site.pk) + ":moved:*"))


def test_moved_first_days_stay_in_small_hashes(site, r):
    info = SiteInfo.from_model(site)
    today = info.today()
    record(r, info, visits(today, range(3000)))
    record(
        r, info, visits(today - timedelta(days=1), range(0, 3000, 2))
    )  # (every other visitor was there the day before)
    assert new_on(r, site, today - timedelta(days=1)) == 1500 and new_on(r, site, today) == 1500
    node = site_client(r, site.pk)
    names = list(node.scan_iter(match=keys.first_days(site.pk) + ":moved:*"))
    assert len(names) == -(-3000 // keys.FIRST_DAYS_MOVED)
    assert sum(node.hlen(n) for n in names) == 1500
    assert {node.object("encoding", n) for n in names} <= {b"listpack", b"ziplist"}


@pytest.mark.parametrize("moved_into_runs", [False, True])
def test_first_days_of_an_earlier_version_are_read_for_the_ids_they_hold(site, r, moved_into_runs):
    """Earlier versions kept a u16 per id in one string: ids handed out before the first
    run are looked up there, or in the runs the migration made of them, and a backfill
    moves them as before."""
    info = SiteInfo.from_model(site)
    today = info.today()
    record(r, info, visits(today, range(5000)))
    r.delete(keys.first_days_runs(site.pk))  # (as an earlier version left it:)
    r.set(keys.first_days(site.pk), day_number(today).to_bytes(2, "big") * 5000)
    if moved_into_runs:
        assert firstdays.migrate(r, site.pk, chunk=700) == 5000
        assert not r.exists(keys.first_days(site.pk))
        assert r.zrange(keys.first_days_runs(site.pk), 0, -1) == [f"0:{day_number(today)}".encode()]
    yesterday = today - timedelta(days=1)
    record(r, info, visits(yesterday, range(3900, 4100)))
    assert (new_on(r, site, yesterday), new_on(r, site, today)) == (200, 4800)
    record(r, info, visits(today, range(5000, 5100)))  # new ones from here: a run
    record(r, info, visits(yesterday - timedelta(days=1), [0, 3950, 5050]))  # legacy, moved, and run ids
    assert [new_on(r, site, yesterday - timedelta(days=d)) for d in (-1, 0, 1)] == [4799 + 99, 199, 3]


def test_a_backfill_of_few_visitors_across_many_runs_reads_each_ones_run(site, r):
    """Few visitors spread over many runs are looked up one by one (lib/firstdays.lua's
    second way): same answers as brute force."""
    info = SiteInfo.from_model(site)
    today = info.today()
    first: dict[int, date] = {}
    for k in range(40):  # 40 calls of 10 new visitors, on alternating days: 40 runs
        day = today - timedelta(days=k % 2)
        record(r, info, visits(day, range(10 * k, 10 * k + 10)))
        first.update(dict.fromkeys(range(10 * k, 10 * k + 10), day))
    assert r.zcard(keys.first_days_runs(site.pk)) == 40
    early = today - timedelta(days=3)
    record(r, info, visits(early, [5, 395]))  # (ids 5 and 395: 39 runs between)
    first.update({5: early, 395: early})
    for day in (today, today - timedelta(days=1), early):
        assert new_on(r, site, day) == sum(1 for f in first.values() if f == day), day


def first_day_read(node, site_id: int, visitor_id: int) -> int:
    """A visitor id's first day the way lib/firstdays.lua reads it: a moved entry, else its
    run, else earlier versions' string."""
    moved = node.hget(
        keys.first_days_moved(site_id, visitor_id // keys.FIRST_DAYS_MOVED), visitor_id % keys.FIRST_DAYS_MOVED
    )
    if moved is not None:
        return int(moved)
    run = node.zrevrangebyscore(keys.first_days_runs(site_id), visitor_id, "-inf", start=0, num=1)
    if run:
        return int(run[0].split(b":")[1])
    return node.bitfield(keys.first_days(site_id)).get("u16", f"#{visitor_id}").execute()[0]


@pytest.mark.one_leg  # (the script's runs of first days: the same on every server)
def test_earlier_first_days_move_into_runs_and_moved_ids_with_every_day_kept(site, r):
    """Days held for stretches of ids (an import, live days), odd ids between (backfills
    of old), unknown ones (0), a backfill after the upgrade (a moved entry that must win)
    and ids past the string's end: every id reads the same day after the migration, in
    chunks that cut stretches, and the string is gone."""
    info = SiteInfo.from_model(site)
    node = site_client(r, site.pk)
    rng = random.Random(7)
    n = 20_000
    days, day = [], 9000
    while len(days) < n:
        day += rng.choice([1, 1, 1, -3])
        days += [day] * rng.choice([1, 3, 7, 8, 50, 400, 2000])
    days = days[:n]
    for i in rng.sample(range(n), 300):
        days[i] = rng.choice([0, days[i] - rng.randrange(1, 40)])
    record(r, info, visits(info.today(), range(n + 500)))  # (ids 0 .. n + 499; runs from n on:)
    r.zremrangebyscore(keys.first_days_runs(site.pk), "-inf", n - 1)
    r.zadd(keys.first_days_runs(site.pk), {f"{n}:{day_number(info.today())}": n})
    r.set(keys.first_days(site.pk), b"".join(d.to_bytes(2, "big") for d in days[: n - 100]))  # (the last 100: unknown)
    expected = days[: n - 100] + [0] * 100
    backfilled = 1234
    node.hset(
        keys.first_days_moved(site.pk, backfilled // keys.FIRST_DAYS_MOVED), backfilled % keys.FIRST_DAYS_MOVED, 42
    )
    expected[backfilled] = 42
    before = [first_day_read(node, site.pk, i) for i in range(n)]
    assert before == expected

    assert firstdays.migrate(r, site.pk, chunk=997) == n
    assert not r.exists(keys.first_days(site.pk), keys.first_days_runs_aside(site.pk))
    assert [first_day_read(node, site.pk, i) for i in range(n)] == expected
    assert first_day_read(node, site.pk, n + 10) == day_number(info.today())
    changes = sum(1 for i in range(1, n) if expected[i] != expected[i - 1])
    assert r.zcard(keys.first_days_runs(site.pk)) < changes / 2  # (the odd ids are not runs)
    assert firstdays.migrate(r, site.pk) == 0  # (done: nothing left)


def test_a_backfill_while_the_earlier_first_days_move_is_kept(site, r):
    """Ingest runs beside the migration: a backfill between two of its calls moves
    visitors (reading the string, still the answer for its ids), and neither the moved
    days nor the new visitors' counts are lost when the runs are joined."""
    info = SiteInfo.from_model(site)
    today = info.today()
    yesterday, before = today - timedelta(days=1), today - timedelta(days=2)
    record(r, info, visits(today, range(5000)))
    r.delete(keys.first_days_runs(site.pk))
    r.set(keys.first_days(site.pk), day_number(today).to_bytes(2, "big") * 5000)
    calls = []

    def meanwhile(_):
        calls.append(1)
        if len(calls) == 3:
            record(r, info, visits(yesterday, range(100, 4100, 2)))  # (ids in chunks done and chunks to come)
            record(r, info, visits(today, range(5000, 5100)))  # (and new visitors: a live run)

    firstdays.migrate(r, site.pk, chunk=500, progress=meanwhile)
    assert len(calls) == 10 and not r.exists(keys.first_days(site.pk))
    assert (new_on(r, site, yesterday), new_on(r, site, today)) == (2000, 3100)
    record(r, info, visits(before, [100, 101, 4500, 5050]))  # (moved, run, legacy-run and live-run ids)
    assert [new_on(r, site, d) for d in (before, yesterday, today)] == [4, 1999, 3097]


@pytest.mark.parametrize("by", ["nightly rollup", "command"])
def test_the_nightly_rollup_and_the_command_move_earlier_first_days(site, r, by):
    from django.core.management import call_command

    from analytics.rollups.jobs import roll_closed

    info = SiteInfo.from_model(site)
    today = info.today()
    record(r, info, visits(today, range(3000)))
    r.delete(keys.first_days_runs(site.pk))
    r.set(keys.first_days(site.pk), day_number(today).to_bytes(2, "big") * 3000)
    if by == "command":
        call_command("migrate_visitor_ids", "example.com")
    else:
        roll_closed(r, site)
    assert not r.exists(keys.first_days(site.pk))
    assert r.zrange(keys.first_days_runs(site.pk), 0, -1) == [f"0:{day_number(today)}".encode()]
