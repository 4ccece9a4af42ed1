"""Closed days' page HLLs fold into stored rows and week/month HLLs (issue 13, item 8):
once a day's page keys expire (keep_page_days), top pages, a page's days and page goals
over old ranges still agree with brute force, from the rows and the merged HLLs."""

import io
import random
from collections import defaultdict
from datetime import timedelta

from django.core.management import call_command

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import Goal
from analytics.queries import goals, page_timeseries, top_pages
from analytics.sites import SiteInfo
from analytics.store import keys
from tests.hll import hll_tolerance
from tests.test_rollups import at

DAYS = 24


def test_old_ranges_read_the_folded_week_and_month_hlls_and_the_stored_rows(make_site, r, no_grace):
    site, _ = make_site()
    site.keep_page_days = 3
    site.save()
    info = SiteInfo.from_model(site)
    today = info.today()
    first = today - timedelta(days=DAYS - 1)
    rng = random.Random(4)
    views, people, per_day = defaultdict(int), defaultdict(set), defaultdict(lambda: defaultdict(set))
    hits = []
    for day in (first + timedelta(days=n) for n in range(DAYS)):
        for _ in range(150):
            page, v = f"/docs/{rng.randrange(4)}", rng.randrange(400)
            hits.append(Hit(at(day, rng.randrange(24)), page, "pageview", identity_source(None, f"v{v}", None, None)))
            views[page] += 1
            people[page].add(v)
            per_day[day][page].add(v)
    record(r, info, hits)
    call_command("rollup", "--from", first.isoformat(), stdout=io.StringIO(), stderr=io.StringIO())

    old = today - timedelta(days=10)
    assert not r.exists(keys.page_visitors(site.id, old, "/docs/1"))  # the day HLL is gone...
    week_key = keys.period_visitors(site.id, "week", old - timedelta(days=old.weekday()), "/docs/1")
    assert 300 * 86400 < r.ttl(week_key) <= 400 * 86400  # ... its week's lives keep_page_period_days

    rows = top_pages(r, info, first, today, 10)
    for row in rows:
        assert row["pageviews"] == views[row["page"]]
        assert abs(row["visitors"] - len(people[row["page"]])) <= hll_tolerance(len(people[row["page"]])), row
    days = page_timeseries(r, info, "/docs/2", first, today)
    for row in days:
        truth = len(per_day[first + timedelta(days=days.index(row))]["/docs/2"])
        assert abs(row["visitors"] - truth) <= hll_tolerance(truth)
    Goal.objects.create(site=site, name="Docs", page_pattern="/docs/*")
    (goal,) = goals(r, info, first, today, visitors=400)
    truth = len(set().union(*people.values()))
    assert goal["events"] == sum(views.values())
    assert abs(goal["visitors"] - truth) <= hll_tolerance(truth)


def test_a_week_is_merged_from_every_day_once_it_has_ended_not_each_night(make_site, r):
    """The nightly rollup merged each page's month so far into its month key every night
    (31 sources a page, half a one-day rollup's time); a period is merged once it has ended,
    from every day still there (keep_page_days outlives it), and holds them all."""
    from analytics.rollups import jobs

    site, _ = make_site()
    info = SiteInfo.from_model(site)
    today = info.today()
    monday = today - timedelta(days=today.weekday() + 14)
    week = [monday + timedelta(days=n) for n in range(7)]
    people: set[int] = set()
    for n, day in enumerate(week):
        visitors = range(40 * n, 40 * n + 60)  # (a third of each day's came the day before)
        record(
            r, info, [Hit(at(day, 12), "/a", "pageview", identity_source(None, f"v{v}", None, None)) for v in visitors]
        )
        people.update(visitors)
    week_key = keys.period_visitors(site.id, "week", monday, "/a")
    for day in week:  # (each night rolls up the day before)
        jobs.rollup(r, site, day, day, today=day + timedelta(days=1))
        assert bool(r.exists(week_key)) == (day == week[-1]), day
    assert abs(r.pfcount(week_key) - len(people)) <= hll_tolerance(len(people))
    rows = top_pages(r, info, monday, week[-1], 10)
    assert abs(rows[0]["visitors"] - len(people)) <= hll_tolerance(len(people))


def test_a_week_past_the_default_keep_page_days_reads_its_merged_key(make_site, r, monkeypatch):
    """Under the default keep_page_days (35), a week's day keys outlive its final merge; 35
    days on they expire, and its ranges read the week's key: the whole week within an HLL's
    bound of brute force, a part of it never below its largest day nor above its days'
    sum (the week key over-covers it), kept or read day by day."""
    from analytics.queries import kept
    from analytics.rollups import jobs
    from analytics.sites import SiteInfo as Info

    site, _ = make_site()
    assert site.keep_page_days == 35
    info = SiteInfo.from_model(site)
    today = info.today()
    monday = today - timedelta(days=today.weekday() + 14)
    week = [monday + timedelta(days=n) for n in range(7)]
    daily: dict = {}
    for n, day in enumerate(week):
        daily[day] = set(range(40 * n, 40 * n + 60))
        hits = [Hit(at(day, 12), "/a", "pageview", identity_source(None, f"v{v}", None, None)) for v in daily[day]]
        record(r, info, hits)
    for day in week:  # (each night rolls up the day before)
        jobs.rollup(r, site, day, day, today=day + timedelta(days=1))
    later = today + timedelta(days=30)  # (35 days after the week: its day keys have expired)
    monkeypatch.setattr(Info, "today", lambda self: later)
    for day in week:
        r.delete(keys.page_visitors(site.id, day, "/a"))
    people = set().union(*daily.values())
    for min_days in (3, 10**6):
        monkeypatch.setattr(kept, "MIN_DAYS", min_days)
        (row,) = top_pages(r, info, monday, week[-1], 10)
        assert abs(row["visitors"] - len(people)) <= hll_tolerance(len(people)), min_days
        (part,) = top_pages(r, info, week[1], week[3], 10)
        assert max(len(daily[d]) for d in week[1:4]) <= part["visitors"] <= sum(len(daily[d]) for d in week[1:4])
        assert part["visitors"] > 0
