"""GET /api/v1/stats/aggregate and numbers that agree: exact unions for stable-salt sites,
estimates clamped to the exact counts beside them (issue 11, items 1-3)."""

import random
from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta

import pytest

from analytics import queries, rollups, sites
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.rollups import expiry
from analytics.sites import SiteInfo
from analytics.store import keys
from tests.hll import hll_tolerance


def at(day):
    return datetime.combine(day, time(12), tzinfo=UTC)


def history(r, site, days=40, seed=11):
    """Visits over `days` days ending today: {day: {visitor numbers}} and pageviews per day."""
    info = SiteInfo.from_model(site)
    today = info.today()
    rng = random.Random(seed)
    active, views = defaultdict(set), defaultdict(int)
    hits = []
    for offset in range(days):
        day = today - timedelta(days=offset)
        for _ in range(rng.randrange(50, 150)):
            v = rng.randrange(600)
            active[day].add(v)
            views[day] += 1
            hits.append(Hit(at(day), f"/p{v % 9}", "pageview", identity_source(None, f"v{v}", None, None)))
    hits.sort(key=lambda h: h.ts)
    for i in range(0, len(hits), 900):
        record(r, info, hits[i : i + 900])
    return info, active, views


def get(client, key, **params):
    return client.get("/api/v1/stats/aggregate", params, HTTP_AUTHORIZATION=f"Bearer {key}")


def test_visitors_over_any_range_are_the_exact_union(client, make_site, r):
    site, key = make_site()
    info, active, views = history(r, site)
    today = info.today()
    for first, last in (
        (today - timedelta(days=29), today),
        (today - timedelta(days=10), today - timedelta(days=3)),
        (today, today),
    ):
        days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
        union = set().union(*(active[d] for d in days))
        body = get(client, key, site="example.com", **{"from": first.isoformat(), "to": last.isoformat()}).json()
        assert body["results"]["visitors"] == {"value": len(union)}, (first, last)
        assert body["results"]["pageviews"] == {"value": sum(views[d] for d in days)}
        assert body["results"]["dau"] == {"value": int(sum(len(active[d]) for d in days) / len(days) + 0.5)}
    # a day's visitors are its DAU, live and once rolled up
    rows = queries.timeseries(r, info, today - timedelta(days=5), today, ("visitors", "dau"))
    assert all(row["visitors"] == row["dau"] for row in rows)
    rollups.rollup(r, site, today - timedelta(days=39), today)
    for interval in ("week", "month"):
        for row in queries.timeseries(r, info, today - timedelta(days=39), today, ("visitors",), interval):
            start = datetime.fromisoformat(row["date"]).date()
            members = [d for d in active if d >= start and (d - start).days < (7 if interval == "week" else 31)]
            if interval == "month":
                members = [d for d in members if d.month == start.month]
            assert row["visitors"] == len(set().union(*(active[d] for d in members))), row


def test_compare_with_the_previous_period(client, make_site, r):
    site, key = make_site()
    info, active, views = history(r, site, days=20)
    today = info.today()
    first = today - timedelta(days=6)
    before = [first - timedelta(days=n) for n in range(1, 8)]
    body = get(
        client,
        key,
        site="example.com",
        compare="previous_period",
        metrics="visitors,pageviews",
        **{"from": first.isoformat(), "to": today.isoformat()},
    ).json()
    now_views, old_views = sum(views[first + timedelta(days=n)] for n in range(7)), sum(views[d] for d in before)
    assert body["results"]["pageviews"] == {
        "value": now_views,
        "change": round(100 * (now_views - old_views) / old_views, 1),
    }
    assert set(body["results"]) == {"visitors", "pageviews"}
    empty = get(
        client,
        key,
        site="example.com",
        compare="previous_period",
        **{"from": (today - timedelta(days=19)).isoformat(), "to": today.isoformat()},
    ).json()
    assert empty["results"]["visitors"]["change"] is None  # nothing before: "new", not +infinity%


@pytest.mark.parametrize(
    "params, message",
    [
        ({"metrics": "visitors,nope"}, "metrics: unknown nope"),
        ({"compare": "decade"}, "compare: must be one of previous_period, year"),
    ],
)
def test_bad_parameters_are_400(client, make_site, params, message):
    _, key = make_site()
    response = get(client, key, site="example.com", **params)
    assert response.status_code == 400 and response.json()["error"].startswith(message)


def test_a_daily_salt_sites_range_is_an_estimate_never_below_its_largest_day(make_site, r):
    site, _ = make_site(identity_mode="daily")
    info, active, views = history(r, site, days=10)
    today = info.today()
    total = queries.aggregate(r, info, today - timedelta(days=9), today)["visitors"]["value"]
    assert total >= max(len(v) for v in active.values())
    truth = sum(len(v) for v in active.values())  # (daily salt: a new person every day)
    assert abs(total - truth) <= hll_tolerance(truth)


def test_a_daily_salt_sites_wau_and_mau_are_unions_of_its_days_visitors(make_site, r):
    """Its ids are each day's own: an OR of day bitmaps counted people of different days as
    one (the audit's MAU of 5 beside 10 visitors). WAU and MAU are the HLL unions of the
    days' visitors, like its visitors over a range, live, filtered and rolled up."""
    site, _ = make_site(identity_mode="daily")
    info, active, views = history(r, site, days=10)
    today = info.today()

    def truth(window):
        return sum(len(active[today - timedelta(days=n)]) for n in range(window))  # (a new person every day)

    totals = queries.aggregate(r, info, today - timedelta(days=9), today)
    for metric, window in (("wau", 7), ("mau", 30)):
        assert abs(totals[metric]["value"] - truth(window)) <= hll_tolerance(truth(window)), metric
    assert totals["mau"]["value"] >= totals["visitors"]["value"] * 0.97
    filters = queries.segments.parse("page~/p")  # (every page: everyone)
    rows, estimated = queries.filtered.daily_values(r, info, filters, today, today)
    assert estimated and abs(rows[today]["mau"] - truth(30)) <= hll_tolerance(truth(30))
    rollups.rollup(r, site, today - timedelta(days=9), today)
    [row] = queries.timeseries(r, info, today, today, ("mau",))
    assert abs(row["mau"] - truth(30)) <= hll_tolerance(truth(30))


def test_a_page_never_has_more_visitors_than_pageviews(site, r):
    info = SiteInfo.from_model(site)
    today = info.today()
    record(r, info, [Hit(None, "/rare", "pageview", identity_source(None, "one", None, None))])
    r.pfadd(keys.page_visitors(site.pk, today, "/rare"), *[f"x{n}" for n in range(50)])  # an estimate far above
    [page] = queries.top_pages(r, info, today, today)
    assert page == {"page": "/rare", "visitors": 1, "pageviews": 1}
    assert queries.page_timeseries(r, info, "/rare", today, today)[0]["visitors"] == 1


def test_todays_and_yesterdays_cohorts_are_live(make_site, r):
    """Issue 11: the cards said 7 new visitors while the heatmap's stored cohort said 2."""
    site, _ = make_site()
    info, active, views = history(r, site, days=5)
    today = info.today()
    rollups.rollup(r, site, today - timedelta(days=4), today)
    late = [
        Hit(at(d), "/", "pageview", identity_source(None, f"late-{d}-{n}", None, None))
        for d in (today, today - timedelta(days=1))
        for n in range(3)
    ]
    record(r, info, late)
    cohorts = {c["cohort"]: c for c in queries.retention(r, info, "day", today - timedelta(days=4), today, 30)}
    totals = queries.aggregate(r, info, today, today, ("new_visitors",))
    assert cohorts[today.isoformat()]["size"] == totals["new_visitors"]["value"]
    assert (
        cohorts[(today - timedelta(days=1)).isoformat()]["size"]
        == queries.aggregate(r, info, today - timedelta(days=1), today - timedelta(days=1), ("new_visitors",))[
            "new_visitors"
        ]["value"]
    )
    stored_week = rollups_week_size(site, today)
    live_week = queries.retention(r, info, "week", today, today, 12)[0]
    late_this_week = 3 * (1 + (today.weekday() > 0))  # (on a Monday, yesterday's late ones are last week's)
    assert live_week["size"] == stored_week + late_this_week  # the late ones, live


def rollups_week_size(site, today):
    from analytics.models import Retention

    return Retention.objects.get(site=site, unit="week", cohort=today - timedelta(days=today.weekday())).size


def test_today_by_the_hour(client, make_site, r):
    """Issue 11: interval=hour, rows dated in the site's time zone, pageviews exact."""
    site, key = make_site(timezone="Asia/Kolkata")  # (a half-hour offset: hours are local)
    info = SiteInfo.from_model(site)
    today = info.today()
    rng = random.Random(2)
    events = []
    for _ in range(1200):
        local = datetime.combine(today, time(rng.randrange(24), rng.randrange(60)), tzinfo=info.tz)
        events.append((local, f"v{rng.randrange(300)}"))
    now = max(local for local, _ in events).astimezone(UTC)
    hits = [Hit(local.astimezone(UTC), "/", "pageview", identity_source(None, v, None, None)) for local, v in events]
    record(r, info, hits, now=now)
    body = client.get(
        "/api/v1/stats/timeseries",
        {"site": "example.com", "interval": "hour", "from": today.isoformat(), "to": today.isoformat()},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()
    rows = body["results"]
    assert [row["date"] for row in rows] == [f"{today.isoformat()}T{h:02d}:00" for h in range(24)]
    this_hour = datetime.now(info.tz).hour
    for hour, row in enumerate(rows):
        if hour > this_hour:  # (an hour still to come has no numbers yet, not zeros)
            assert row["pageviews"] is None and row["visitors"] is None
            continue
        truth = [v for local, v in events if local.hour == hour]
        assert row["pageviews"] == len(truth)
        assert abs(row["visitors"] - len(set(truth))) <= hll_tolerance(len(set(truth)))
    too_long = client.get(
        "/api/v1/stats/timeseries",
        {"site": "example.com", "interval": "hour", "from": (today - timedelta(days=2)).isoformat()},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert too_long.status_code == 400 and too_long.json()["error"] == "interval=hour: at most 2 days"


def test_hours_whose_keys_have_expired_are_null_not_zero(client, make_site, r, no_grace):
    """Yesterday against the same date last year, by the hour, read zeros once last year's
    hour keys had expired (past the site's keep_daily_days), as if nobody had come: those
    hours are unknown, null like the hours to come. A real zero hour stays 0, on a day
    past the policy whose keys are still there too, and so does a day the policy keeps."""
    site, key = make_site()
    info = SiteInfo.from_model(site)
    yesterday = info.today() - timedelta(days=1)
    last_year = queries.previous("year", yesterday, yesterday)[0]
    hits = [
        Hit(datetime.combine(day, time(10, n), tzinfo=UTC), "/", "pageview", identity_source(None, f"v{n}", None, None))
        for day in (yesterday, last_year)
        for n in range(3)
    ]
    record(r, info, hits)

    def compared(compare="year"):
        body = client.get(
            "/api/v1/stats/timeseries",
            {
                "site": "example.com",
                "interval": "hour",
                "from": yesterday.isoformat(),
                "to": yesterday.isoformat(),
                "compare": compare,
            },
            HTTP_AUTHORIZATION=f"Bearer {key}",
        ).json()
        assert [row["pageviews"] for row in body["results"]] == [3 if hour == 10 else 0 for hour in range(24)]
        return [(row["visitors"], row["pageviews"]) for row in body["comparison"]["results"]]

    counted = [(3, 3) if hour == 10 else (0, 0) for hour in range(24)]
    assert compared() == counted  # (kept by the policy: 400 days)
    site.keep_daily_days = 30
    site.save()
    sites.clear_cache()
    assert compared() == counted  # past the policy, but not expired yet: still the numbers
    expiry.apply(r, site, [last_year])  # (an EXPIREAT long past: the keys go now)
    assert not r.exists(keys.hour_pageviews(site.id, last_year, 10))
    assert compared() == [(None, None)] * 24
    assert compared("previous_period") == [(0, 0)] * 24  # a day without visitors the policy keeps: zeros


def test_a_day_without_traffic_whose_hour_keys_expired_is_zeros_not_null(client, make_site, r, no_grace):
    """A day past the policy without its hour keys read null, even when its final row says
    it had no traffic at all: its hours are 0, not unknown. A day that had traffic, or one
    without a stored final row, stays null; before expiry the hours are the brute-force
    counts."""
    from analytics.models import DailyMetrics

    site, key = make_site()
    info = SiteInfo.from_model(site)
    today = info.today()
    busy, quiet = today - timedelta(days=21), today - timedelta(days=20)
    unknown = today - timedelta(days=30)  # (before the first rollup: no row)
    rng = random.Random(5)
    events = [(time(rng.randrange(24), rng.randrange(60)), f"v{rng.randrange(40)}") for _ in range(200)]
    record(
        r,
        info,
        [
            Hit(datetime.combine(busy, at, tzinfo=UTC), "/", "pageview", identity_source(None, v, None, None))
            for at, v in events
        ],
    )

    def hours(first, last):
        body = client.get(
            "/api/v1/stats/timeseries",
            {"site": "example.com", "interval": "hour", "from": first.isoformat(), "to": last.isoformat()},
            HTTP_AUTHORIZATION=f"Bearer {key}",
        ).json()
        return [(row["visitors"], row["pageviews"]) for row in body["results"]]

    before = hours(busy, quiet)
    for hour, (visitors, views) in enumerate(before[:24]):
        truth = [v for at, v in events if at.hour == hour]
        assert views == len(truth) and abs(visitors - len(set(truth))) <= hll_tolerance(len(set(truth))), hour
    assert before[24:] == [(0, 0)] * 24
    rollups.rollup(r, site, busy, today - timedelta(days=1))
    assert DailyMetrics.objects.filter(site=site, date=quiet, final=True, visitors=0, pageviews=0).exists()
    site.keep_daily_days = 10
    site.save()
    sites.clear_cache()
    expiry.apply(r, site, [busy, quiet])  # (EXPIREATs long past: the busy day's hour keys go now)
    assert not r.exists(keys.hour_pageviews(site.id, busy, events[0][0].hour))
    assert hours(busy, quiet) == [(None, None)] * 24 + [(0, 0)] * 24  # unknown hours; a day known to be empty
    assert hours(unknown, unknown) == [(None, None)] * 24  # (no row says it was empty)
    DailyMetrics.objects.filter(site=site, date=quiet).update(final=False)
    assert hours(quiet, quiet) == [(None, None)] * 24  # (only a final row is the record)


def test_today_is_compared_with_yesterday_up_to_the_same_hour(make_site, r):
    site, _ = make_site()
    info = SiteInfo.from_model(site)
    now = datetime.now(info.tz)
    today, yesterday = now.date(), now.date() - timedelta(days=1)
    early = datetime.combine(yesterday, time(0, 5), tzinfo=info.tz)
    late = datetime.combine(yesterday, time(23, 55), tzinfo=info.tz)
    hits = [Hit(early.astimezone(UTC), "/", "pageview", identity_source(None, f"e{n}", None, None)) for n in range(4)]
    if now.hour < 23:
        hits += [
            Hit(late.astimezone(UTC), "/", "pageview", identity_source(None, f"l{n}", None, None)) for n in range(40)
        ]
    hits += [Hit(None, "/", "pageview", identity_source(None, f"t{n}", None, None)) for n in range(5)]
    record(r, info, hits)
    result = queries.aggregate(r, info, today, today, compare="previous_period")
    assert result["pageviews"] == {"value": 5, "change": 25.0}  # 5 against yesterday's 4 by this hour, not 44
    assert result["visitors"] == {"value": 5, "change": 25.0}
    assert result["new_visitors"]["change"] is None  # (not kept by the hour: no comparison)
    assert result["visits"]["change"] is None
    assert "new_visitors" not in queries.comparable_metrics(
        info, "previous_period", today, today
    )  # (so not shown "new")


def test_plausibles_named_periods_pick_their_days(client, make_site):
    """`period` (and `date`) as Plausible's Stats API v1 takes them, instead of from/to."""
    site, key = make_site()
    today = SiteInfo.from_model(site).today()

    def answered(**params):
        response = client.get(
            "/api/v1/stats/aggregate",
            {"site": "example.com", "metrics": "pageviews", **params},
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        return response.status_code, response.json()

    def days(**params):
        status, body = answered(**params)
        assert status == 200, body
        return body["from"], body["to"]

    iso = date.isoformat
    assert days(period="day") == (iso(today), iso(today))
    assert days(period="day", date="2024-02-29") == ("2024-02-29", "2024-02-29")
    assert days(period="7d", date="2024-03-03") == ("2024-02-26", "2024-03-03")
    assert days(period="30d") == (iso(today - timedelta(days=29)), iso(today))
    assert days(period="month", date="2024-02-10") == ("2024-02-01", "2024-02-29")
    assert days(period="month") == (iso(today.replace(day=1)), iso(today))  # (not past today)
    assert days(period="6mo", date="2024-03-15") == ("2023-10-01", "2024-03-31")
    assert days(period="12mo", date="2024-01-05") == ("2023-02-01", "2024-01-31")
    assert days(period="last_month", date="2024-03-15") == ("2024-02-01", "2024-02-29")
    assert days(period="custom", date="2024-01-01,2024-01-31") == ("2024-01-01", "2024-01-31")
    for params, error in (
        ({"period": "fortnight"}, "period: unknown period 'fortnight'"),
        ({"period": "custom", "date": "2024-01-01"}, "date: period=custom needs"),
        ({"period": "custom", "date": "2024-01-31,2024-01-01"}, "date: FROM must not be after TO"),
        ({"period": "day", "date": "someday"}, "date: not a date"),
        ({"period": "7d", "from": "2024-01-01"}, "period: give either period"),
        ({"period": "12mo", "date": "2000-03-01"}, "date: period=12mo would start before 2000-01-01"),
    ):
        status, body = answered(**params)
        assert status == 400 and body["error"].startswith(error), (params, body)
