"""Rollups against brute force over the same events: WAU/MAU and retention exact."""

import random
from collections import defaultdict
from datetime import UTC, datetime, time, timedelta

import pytest

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import DailyMetrics, PeriodVisitors, Retention
from analytics.rollups import jobs as rollups
from analytics.rollups import rows as row_writes
from analytics.sites import SiteInfo
from analytics.store import keys
from tests.hll import hll_tolerance


def at(day, hour=0):
    return datetime.combine(day, time(hour), tzinfo=UTC)


def ingest_history(r, site, days=50, seed=5, pool=400):
    """Random visits over `days` days ending today (site in UTC); returns {day: set(visitors)}."""
    info = SiteInfo.from_model(site)
    today = info.today()
    rng = random.Random(seed)
    active = defaultdict(set)
    hits = []
    for offset in range(days - 1, -1, -1):
        day = today - timedelta(days=offset)
        for _ in range(rng.randrange(60, 140)):
            v = min(rng.randrange(pool), rng.randrange(pool))  # some visitors return often
            active[day].add(v)
            page = f"/p{rng.randrange(6)}"
            hits.append(Hit(at(day), page, "pageview", identity_source(None, f"v{v}", None, None)))
    for i in range(0, len(hits), 500):
        record(r, info, hits[i : i + 500])
    return active


def brute_force(active):
    days = sorted(active)
    first = {}
    for day in days:
        for v in active[day]:
            first.setdefault(v, day)
    new = defaultdict(set)
    for v, day in first.items():
        new[day].add(v)

    def union(day, window):
        out = set()
        for n in range(window):
            out |= active.get(day - timedelta(days=n), set())
        return out

    def monday(d):
        return d - timedelta(days=d.weekday())

    week_active, week_new = defaultdict(set), defaultdict(set)
    for day in days:
        week_active[monday(day)] |= active[day]
        week_new[monday(day)] |= new[day]
    return new, union, week_active, week_new


def test_rollup_matches_brute_force(site, r):
    active = ingest_history(r, site)
    today = SiteInfo.from_model(site).today()
    start = today - timedelta(days=49)
    rollups.rollup(r, site, start, today)
    new, union, week_active, week_new = brute_force(active)

    rows = {row.date: row for row in DailyMetrics.objects.filter(site=site)}
    assert sorted(rows) == sorted(active)
    for day, row in rows.items():
        assert row.dau == len(active[day])
        assert row.new_visitors == len(new[day])
        assert row.wau == len(union(day, 7))
        assert row.mau == len(union(day, 30))
        assert abs(row.visitors - row.dau) <= hll_tolerance(row.dau)
        assert row.final == (day < today)
        assert row.stickiness == round(row.dau / row.mau, 4)

    for cohort in Retention.objects.filter(site=site, unit="day"):
        c = cohort.cohort
        expected = [
            len(new[c] & active.get(c + timedelta(days=n), set())) for n in range(min(30, (today - c).days) + 1)
        ]
        assert cohort.size == len(new[c])
        assert cohort.retained == expected, c
        assert cohort.retained[0] == cohort.size
    # the 50 days, and the 30 before whose cohorts they could reach (empty ones)
    assert Retention.objects.filter(site=site, unit="day").count() == 80

    this_week = today - timedelta(days=today.weekday())
    weekly = Retention.objects.filter(site=site, unit="week")
    assert weekly.count() >= 7
    for cohort in weekly:
        w = cohort.cohort
        assert w.weekday() == 0
        reach = min(12, (this_week - w).days // 7)
        expected = [len(week_new[w] & week_active[w + timedelta(weeks=n)]) for n in range(reach + 1)]
        assert (cohort.size, cohort.retained) == (len(week_new[w]), expected), w

    for period in PeriodVisitors.objects.filter(site=site):
        if period.unit == "week":
            span = [period.start + timedelta(days=n) for n in range(7)]
        else:
            span = [d for d in active if d.replace(day=1) == period.start]
        truth = len(set().union(*(active.get(d, set()) for d in span)))
        assert abs(period.visitors - truth) <= hll_tolerance(truth), period.start


def test_rerunning_a_rollup_writes_the_same_rows(site, r):
    ingest_history(r, site, days=20)
    today = SiteInfo.from_model(site).today()

    def snapshot():
        return (
            list(
                DailyMetrics.objects.order_by("date").values(
                    "date", "visitors", "pageviews", "dau", "new_visitors", "wau", "mau", "final"
                )
            ),
            list(Retention.objects.order_by("unit", "cohort").values("unit", "cohort", "size", "retained")),
            list(PeriodVisitors.objects.order_by("unit", "start").values("unit", "start", "visitors")),
        )

    rollups.rollup(r, site, today - timedelta(days=19), today)
    first = snapshot()
    rollups.rollup(r, site, today - timedelta(days=19), today)
    rollups.rollup(r, site, today - timedelta(days=5), today - timedelta(days=3))  # a sub-range, later
    assert snapshot() == first


def test_a_missed_night_is_caught_up(site, r):
    active = ingest_history(r, site, days=12)
    today = SiteInfo.from_model(site).today()
    rollups.rollup(r, site, today - timedelta(days=11), today - timedelta(days=6))  # last final: today-6
    assert not DailyMetrics.objects.filter(date=today - timedelta(days=3)).exists()
    summary = rollups.roll_closed(r, site)
    assert summary.days == 5  # today-5 .. yesterday
    final = set(DailyMetrics.objects.filter(site=site, final=True).values_list("date", flat=True))
    assert final == {today - timedelta(days=n) for n in range(1, 12)}
    assert DailyMetrics.objects.get(date=today - timedelta(days=1)).dau == len(active[today - timedelta(days=1)])
    assert rollups.roll_closed(r, site).days == 0  # nothing left to do


def test_a_new_site_catches_up_from_its_creation_day(site, r):
    ingest_history(r, site, days=4)
    type(site).objects.filter(pk=site.pk).update(created=datetime.now(UTC) - timedelta(days=3))
    site.refresh_from_db()
    assert rollups.roll_closed(r, site).days == 3


def test_recent_rollup_does_today_and_yesterday(site, r):
    ingest_history(r, site, days=3)
    today = SiteInfo.from_model(site).today()
    rollups.roll_recent(r, site)
    rows = {row.date: row.final for row in DailyMetrics.objects.all()}
    # today and yesterday, and the day before: its events came in after it (a backfill)
    assert rows == {today - timedelta(days=2): True, today - timedelta(days=1): True, today: False}


def test_a_job_skips_while_another_holds_its_lock(site, r):
    from analytics.store.locks import Lock

    ingest_history(r, site, days=2)
    assert Lock(r, keys.lock(site.pk, "rollup-recent")).acquire()
    assert rollups.roll_recent(r, site) is None
    assert not DailyMetrics.objects.exists()


def test_week_and_month_boundaries_in_a_time_zone(make_site, r):
    site, _ = make_site("la.example", timezone="America/Los_Angeles")
    info = SiteInfo.from_model(site)
    today = info.today()
    # Find the last Sunday at least 3 weeks back (local), and visit late that Sunday
    # evening (already Monday in UTC) and again on Monday.
    sunday = today - timedelta(days=(today.weekday() + 1) % 7 + 21)
    sunday_evening = datetime.combine(sunday, time(22), tzinfo=info.tz)
    record(r, info, [Hit(sunday_evening.astimezone(UTC), "/", "pageview", identity_source(None, "a", None, None))])
    monday_noon = datetime.combine(sunday + timedelta(days=1), time(12), tzinfo=info.tz)
    record(r, info, [Hit(monday_noon.astimezone(UTC), "/", "pageview", identity_source(None, "a", None, None))])
    rollups.rollup(r, site, sunday - timedelta(days=1), today)
    assert DailyMetrics.objects.get(site=site, date=sunday).new_visitors == 1  # local Sunday, not UTC Monday
    week = Retention.objects.get(site=site, unit="week", cohort=sunday - timedelta(days=6))
    assert week.size == 1 and week.retained[:2] == [1, 1]  # new in Sunday's week, back the next
    assert Retention.objects.get(site=site, unit="week", cohort=sunday + timedelta(days=1)).size == 0


def test_scratch_keys_are_removed_even_when_a_job_fails(site, r, monkeypatch):
    ingest_history(r, site, days=3)
    today = SiteInfo.from_model(site).today()

    def boom(*args):
        raise RuntimeError("database went away")

    monkeypatch.setattr(rollups, "_store_retention", boom)
    with pytest.raises(RuntimeError):
        rollups.rollup(r, site, today - timedelta(days=2), today)
    assert list(r.scan_iter(keys.site_prefix(site.pk) + "tmp:*")) == []


def test_expiry_waits_for_the_rollup(site, r):
    ingest_history(r, site, days=5)
    today = SiteInfo.from_model(site).today()
    old = today - timedelta(days=4)
    from analytics.rollups import expiry

    assert expiry.apply_all(r, site, today) == 0  # nothing final: nothing gets a TTL
    assert r.ttl(keys.active(site.pk, old)) == -1
    site.keep_daily_days = 3
    site.keep_page_days = 2
    site.save()
    rollups.rollup(r, site, today - timedelta(days=2), today)
    # rolled and final: expiring at day + keep; today's keys are left alone
    assert 0 < r.ttl(keys.active(site.pk, today - timedelta(days=1))) <= 4 * 86400
    assert r.ttl(keys.page_visitors(site.pk, today - timedelta(days=1), "/p1")) <= 3 * 86400
    assert r.ttl(keys.active(site.pk, today)) == -1
    # the oldest days were never rolled up (older than keep_daily_days): still there, no TTL
    assert r.ttl(keys.active(site.pk, old)) == -1


def test_backfilled_days_are_rolled_again(site, r):
    active = ingest_history(r, site, days=8)
    today = SiteInfo.from_model(site).today()
    rollups.rollup(r, site, today - timedelta(days=7), today)
    r.delete(keys.dirty_days(site.pk))  # (the history itself came in late: start clean)
    old = today - timedelta(days=5)
    before = DailyMetrics.objects.get(site=site, date=old)
    assert before.final and before.dau == len(active[old])
    late = [Hit(at(old, 15), "/late", "pageview", identity_source(None, f"late-{n}", None, None)) for n in range(7)]
    record(r, SiteInfo.from_model(site), late)
    assert r.smembers(keys.dirty_days(site.pk)) == {old.isoformat().encode()}
    summary = rollups.roll_recent(r, site)
    assert summary.days == 3  # today, yesterday, and the backfilled day
    assert DailyMetrics.objects.get(site=site, date=old).dau == len(active[old]) + 7
    assert not r.exists(keys.dirty_days(site.pk))


def test_dirty_days_wait_for_the_next_run_when_a_rollup_fails(site, r, monkeypatch):
    ingest_history(r, site, days=6)
    old = SiteInfo.from_model(site).today() - timedelta(days=4)
    real = rollups.rollup

    def failing_for_old_days(r_, site_, start, end, **kw):
        if start <= old <= end and start < SiteInfo.from_model(site_).today() - timedelta(days=1):
            raise RuntimeError("database went away")
        return real(r_, site_, start, end, **kw)

    monkeypatch.setattr(rollups, "rollup", failing_for_old_days)
    with pytest.raises(RuntimeError):
        rollups.roll_recent(r, site)
    assert old.isoformat().encode() in r.smembers(keys.dirty_days(site.pk))
    monkeypatch.setattr(rollups, "rollup", real)
    rollups.roll_recent(r, site)
    assert DailyMetrics.objects.filter(site=site, date=old, final=True).exists()
    assert not r.exists(keys.dirty_days(site.pk))


def test_no_key_of_a_final_day_lives_forever(site, r):
    """Every raw key a day made (bitmaps, pages, events, visit dimensions and their HLLs)
    gets the policy's expiry once the day is rolled up."""
    from analytics.ingest.visit import visit_attrs

    info = SiteInfo.from_model(site)
    day = info.today() - timedelta(days=2)
    agent = "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"
    hits = [
        Hit(
            at(day, 10 + n % 5),
            f"/p{n % 3}",
            "pageview" if n % 4 else "Signup",
            identity_source(None, f"v{n}", None, None),
            attrs=visit_attrs(
                site.domain,
                f"https://{site.domain}/?utm_source=s{n % 3}",
                "https://news.ycombinator.com/",
                agent,
                "8.8.8.8",
                1280,
            ),
            props=(("plan", f"p{n % 2}"),),
            revenue=("EUR", 1250) if n % 4 == 0 else None,
        )
        for n in range(40)
    ]
    record(r, info, hits)
    rollups.rollup(r, site, day, day)
    forever = [key for key in r.scan_iter(match=f"*{day.isoformat()}*", count=1000) if r.ttl(key) == -1]
    assert forever == []
    field = "referrer\x1fnews.ycombinator.com"  # (its bitmap stands in for its HLL: counts/fold.py)
    assert r.sismember(keys.dimension_bitmap_only(site.pk, day), field) and r.exists(
        keys.dimension_bitmap(site.pk, day, field)
    )


def test_a_rollup_writes_its_rows_a_chunk_a_transaction(site, r, monkeypatch):
    """A day of a million junk rows held SQLite's one write lock 34-40 s in one transaction
    (logins and the drainer failed meanwhile): rows are written UPSERT_ROWS a transaction,
    with no transaction around the chunks, and all of them are stored."""
    from django.db import connection

    from analytics.models import DimensionDaily, PageDaily

    monkeypatch.setattr(row_writes, "UPSERT_ROWS", 40)
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    record(
        r,
        info,
        [Hit(now, f"/p{n}", "pageview", identity_source(None, f"v{n}", None, None)) for n in range(300)],
        now=now,
    )
    chunks = []

    def watched(execute, sql, params, many, context):
        if many and sql.startswith("INSERT INTO"):  # (the upserts: an executemany a chunk)
            # (held: inside a transaction of the rollup's own, around the chunk's one)
            chunks.append((sql.split('"')[1], len(params), len(connection.atomic_blocks) > outside + 1))
        return execute(sql, params, many, context)

    outside = len(connection.atomic_blocks)  # (the test's own transaction)
    with connection.execute_wrapper(watched):
        rollups.rollup(r, site, info.today(), info.today())
    pages = [(n, held) for table, n, held in chunks if table == PageDaily._meta.db_table]
    assert sum(n for n, _ in pages) == 300 and len(pages) == 8  # (300 pages: 7 chunks of 40 and one of 20)
    assert all(n <= 40 for _, n, _ in chunks)
    assert not any(held for _, _, held in chunks)  # (each chunk its own transaction: the lock is let go between)
    assert PageDaily.objects.filter(site=site, date=info.today()).count() == 300
    assert DimensionDaily.objects.filter(site=site, date=info.today()).exists()
