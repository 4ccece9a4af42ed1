"""History of any age: events of any day from 2000 on are counted, rolled up however old,
and their raw keys then expire (a grace period after the rollup for days their policy has
passed), so old history costs rows in the database, not Redis memory; a day sealed since
(its keys expired after its rollup) refuses more events by name; a day whose page keys
alone expired adds late page views to its stored rows once. Against brute force."""

import random
from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta

import orjson
import pytest

from analytics import queries, rollups
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import DailyMetrics, DaySketch, PageDaily
from analytics.periods import days_between, monday
from analytics.rollups import expiry
from analytics.rollups.jobs import roll_recent
from analytics.sites import SiteInfo
from analytics.store import keys
from analytics.store.scripts import MERGE_PAGES
from tests.test_import_log import import_, line

AGENTS = [f"Mozilla/5.0 (X11; Linux x86_64; rv:{n}.0) Gecko/20100101 Firefox/{n}.0" for n in range(120, 126)]
PAGES = ["/", "/pricing", "/docs", "/blog/a", "/blog/b"]


def log_lines(first: date, days: int, seed: int = 3, people: int = 120):
    """(ts, ip, agent, path) of a site's access log over `days` days from `first`: people
    (an IP and a browser each) who come back on some days."""
    rng = random.Random(seed)
    out = []
    for p in range(people):
        ip, agent = f"203.0.{p // 200}.{p % 200 + 1}", rng.choice(AGENTS)
        joined = rng.randrange(days)
        for d in range(joined, days):
            if d != joined and rng.random() < 0.7:
                continue
            t = datetime.combine(first + timedelta(days=d), time(2), tzinfo=UTC) + timedelta(
                seconds=rng.randrange(18 * 3600)
            )
            for _ in range(rng.randint(1, 3)):
                out.append((t, ip, agent, rng.choice(PAGES)))
                t += timedelta(seconds=rng.choice([20, 300]))
    out.sort()
    return out


class Truth:
    """Per day: pageviews, the people active, the people new."""

    def __init__(self, lines):
        self.pageviews, self.active = defaultdict(int), defaultdict(set)
        first_seen = {}
        for ts, ip, agent, _ in lines:
            who, day = (ip, agent), ts.date()
            self.pageviews[day] += 1
            self.active[day].add(who)
            first_seen[who] = min(first_seen.get(who, day), day)
        self.new = defaultdict(set)
        for who, day in first_seen.items():
            self.new[day].add(who)


def write_log(path, lines):
    path.write_text("\n".join(line(ip, ts, page, agent=agent) for ts, ip, agent, page in lines) + "\n")
    return str(path)


def assert_days_exact(r, site, truth, days):
    info = SiteInfo.from_model(site)
    rows = {row.date: row for row in DailyMetrics.objects.filter(site=site, date__in=days)}
    series = {
        row["date"]: row for row in queries.timeseries(r, info, days[0], days[-1], ("pageviews", "dau", "new_visitors"))
    }
    for day in days:
        expected = (truth.pageviews[day], len(truth.active[day]), len(truth.new[day]))
        assert (rows[day].pageviews, rows[day].dau, rows[day].new_visitors) == expected, day
        got = series[day.isoformat()]
        assert (got["pageviews"], got["dau"], got["new_visitors"]) == expected, day


def raw_keys_of(r, site_id: int, days) -> dict[str, int]:
    """Every raw key of the site naming one of these days, with its TTL."""
    names = {day.isoformat() for day in days}
    found = {}
    for key in r.scan_iter(match=f"tally:{{{site_id}}}:*", count=1000):
        key = key.decode()
        if any(name in key for name in names):
            found[key] = r.ttl(key)
    return found


def test_a_year_old_access_log_gives_exact_days_and_leaves_no_key_without_an_expiry(site, r, tmp_path):
    first = datetime.now(UTC).date() - timedelta(days=site.keep_daily_days + 20)
    days = days_between(first, first + timedelta(days=29))  # (straddles keep_daily_days)
    lines = log_lines(first, len(days))
    out = import_("--site", site.domain, write_log(tmp_path / "access.log", lines))
    assert f"imported {len(lines):,} pageviews" in out and f"Rolled up {len(days)} day(s)" in out
    assert_days_exact(r, site, Truth(lines), days)
    ttls = raw_keys_of(r, site.id, days)
    assert ttls and all(ttl > 0 for ttl in ttls.values()), [k for k, t in ttls.items() if t <= 0][:5]
    passed = [d.isoformat() for d in days if d < datetime.now(UTC).date() - timedelta(days=site.keep_daily_days)]
    late = {
        k: t for k, t in ttls.items() if any(f":{d}" in k for d in passed) and "-week:" not in k and ":uv-" not in k
    }  # (weeks and months follow their last day)
    assert (
        late and max(late.values()) <= 48 * 3600 + 60
    )  # (their policy has passed: the grace after the rollup, then gone)
    assert queries.has_events(r, SiteInfo.from_model(site))


def test_the_same_history_through_the_batch_api_is_rolled_up_by_the_next_rollup(client, make_site, r):
    site, key = make_site()
    first = datetime.now(UTC).date() - timedelta(days=site.keep_daily_days + 10)
    days = days_between(first, first + timedelta(days=19))
    lines = log_lines(first, len(days), seed=5)
    body = [
        {"url": f"https://example.com{page}", "ts": ts.isoformat(), "ip": ip, "user_agent": agent}
        for ts, ip, agent, page in lines
    ]
    response = client.post(
        "/api/v1/events", orjson.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 200 and response.json()["accepted"] == len(lines), response.json().get(
        "rejected", []
    )[:3]
    assert queries.has_events(r, SiteInfo.from_model(site))  # (before any rollup: not "waiting for the first event")
    roll_recent(r, site)  # (the five-minute job: the dirty days, however old)
    assert_days_exact(r, site, Truth(lines), days)
    assert all(ttl > 0 for ttl in raw_keys_of(r, site.id, days).values())


def test_a_second_file_of_the_same_days_within_the_grace_adds_exactly(site, r, tmp_path):
    first = datetime.now(UTC).date() - timedelta(days=site.keep_daily_days + 5)
    # (the day whose keys the policy lets go at the coming midnight is left out: in the
    # minutes before it, ingest refuses it by name, REFUSE_AHEAD, the second file's lines too)
    closing = datetime.now(UTC).date() - timedelta(days=site.keep_daily_days)
    days = [day for day in days_between(first, first + timedelta(days=9)) if day != closing]
    lines = [line for line in log_lines(first, 10, seed=9) if line[0].date() != closing]
    import_("--site", site.domain, write_log(tmp_path / "a.log", lines[::2]))
    import_(
        "--site", site.domain, write_log(tmp_path / "b.log", lines[1::2])
    )  # (log rotation: the same days in two files)
    assert_days_exact(r, site, Truth(lines), days)


def test_a_sealed_day_refuses_more_events_by_name(client, make_site, r, tmp_path, no_grace):
    site, key = make_site()
    # (a Monday, so the three days are in one week that ended long enough ago for its week keys to go with them)
    first = monday(datetime.now(UTC).date() - timedelta(days=site.keep_daily_days + 12))
    lines = log_lines(first, 3, seed=2)
    import_("--site", site.domain, write_log(tmp_path / "a.log", lines))
    assert not raw_keys_of(r, site.id, days_between(first, first + timedelta(days=2)))  # (no grace: sealed at once)
    before = DailyMetrics.objects.get(site=site, date=first).pageviews
    late = datetime.combine(first, time(12), tzinfo=UTC)
    body = [
        {"url": "https://example.com/", "visitor": "late", "ts": late.isoformat()},
        {"url": "https://example.com/", "visitor": "now"},
    ]
    answer = client.post(
        "/api/v1/events", orjson.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    ).json()
    assert answer["accepted"] == 1 and answer["rejected"][0]["index"] == 0
    assert f"{first} was rolled up and its raw keys have expired" in answer["rejected"][0]["error"]
    out = import_("--site", site.domain, write_log(tmp_path / "b.log", [(late, "198.51.100.9", AGENTS[0], "/")]))
    assert "imported 0 pageviews" in out and "1 for days sealed" in out
    assert DailyMetrics.objects.get(site=site, date=first).pageviews == before


def _aged_day(r, site, age: int) -> date:
    """A day `age` days ago with traffic, rolled up the night after it; its page keys then
    expire (keep_page_days 3), its other keys stay."""
    day = datetime.now(UTC).date() - timedelta(days=age)
    hits = [
        Hit(
            datetime.combine(day, time(9), tzinfo=UTC) + timedelta(minutes=n),
            PAGES[n % 3],
            "pageview",
            identity_source(None, f"v{n % 7}", None, None),
        )
        for n in range(30)
    ]
    record(r, SiteInfo.from_model(site), hits)
    rollups.rollup(r, site, day, day)
    DailyMetrics.objects.filter(site=site, date=day).update(
        updated=datetime.combine(day + timedelta(days=1), time(1), tzinfo=UTC)
    )
    site.keep_page_days = 3
    site.save()
    expiry.apply_all(r, site, datetime.now(UTC).date())
    assert not r.exists(keys.pages_index(site.id, day)) and r.exists(keys.active(site.id, day))
    return day


def test_late_page_views_on_a_day_whose_page_keys_expired_are_added_to_its_rows_once(site, r):
    day = _aged_day(r, site, 10)
    before = {p.path: (p.visitors, p.pageviews) for p in PageDaily.objects.filter(site=site, date=day)}
    late = [
        Hit(
            datetime.combine(day, time(20), tzinfo=UTC), path, "pageview", identity_source(None, f"late{n}", None, None)
        )
        for n, path in enumerate(["/pricing", "/pricing", "/new"])
    ]
    record(r, SiteInfo.from_model(site), late)
    roll_recent(r, site)
    roll_recent(r, site)  # (nothing left to add: the page keys were taken with the first)
    rollups.rollup(r, site, day, day)
    after = {p.path: (p.visitors, p.pageviews) for p in PageDaily.objects.filter(site=site, date=day)}
    assert after["/pricing"] == (before["/pricing"][0] + 2, before["/pricing"][1] + 2)
    assert after["/new"] == (1, 1)
    assert {k: v for k, v in after.items() if k not in ("/pricing", "/new")} == {
        k: v for k, v in before.items() if k != "/pricing"
    }
    assert DailyMetrics.objects.get(site=site, date=day).pageviews == sum(v for _, v in before.values()) + 3
    values, _ = queries.filtered.daily_values(
        r, SiteInfo.from_model(site), queries.segments.parse("page==/pricing"), day, day, windows=False
    )
    assert values[day]["pageviews"] == before["/pricing"][1] + 2


def test_a_page_merge_cut_short_after_its_rows_were_added_is_not_added_twice(site, r):
    day = _aged_day(r, site, 10)
    record(
        r,
        SiteInfo.from_model(site),
        [
            Hit(
                datetime.combine(day, time(21), tzinfo=UTC),
                "/pricing",
                "pageview",
                identity_source(None, "late", None, None),
            )
        ],
    )
    before = PageDaily.objects.get(site=site, date=day, path="/pricing").pageviews
    expiry.merge_sealed_pages(r, site, [day])
    DailyMetrics.objects.filter(site=site, date=day).update(page_merge_token="0123")
    r.hset(
        keys.page_merge(site.id, day), mapping={b"\0token": b"0123", b"/pricing": b"1 1"}
    )  # (a crash between the rows' transaction and the hash's removal)
    expiry.merge_sealed_pages(r, site, [day])
    assert PageDaily.objects.get(site=site, date=day, path="/pricing").pageviews == before + 1
    assert not r.exists(keys.page_merge(site.id, day))


@pytest.mark.parametrize("moved", [True, False])
def test_the_merge_script_moves_the_page_keys_only_when_the_index_is_as_read(site, r, moved):
    day = date(2024, 3, 1)
    r.sadd(keys.pages_index(site.id, day), "/a")
    r.set(keys.page_pageviews(site.id, day, "/a"), 4)
    r.pfadd(keys.page_visitors(site.id, day, "/a"), "x", "y")
    paths = ["/a"] if moved else ["/a", "/b"]
    args = [k for p in paths for k in (keys.page_pageviews(site.id, day, p), keys.page_visitors(site.id, day, p))]
    answer = MERGE_PAGES.run(r, [keys.pages_index(site.id, day), keys.page_merge(site.id, day), *args], ["t", *paths])
    if moved:
        assert dict(zip(answer[::2], answer[1::2])) == {b"\0token": b"t", b"/a": b"4 2"}
        assert not r.exists(keys.pages_index(site.id, day), keys.page_pageviews(site.id, day, "/a"))
    else:
        assert answer is None and r.exists(keys.page_pageviews(site.id, day, "/a"))


def test_a_day_being_rolled_up_late_is_not_sealed_before_its_rollup_says_when_its_keys_go(site, r):
    """_store_days writes an old day's row before expiry.apply records its keys' expiry:
    meanwhile the day takes events (a client still sending history)."""
    from analytics import sites

    day = datetime.now(UTC).date() - timedelta(days=site.keep_daily_days + 50)
    DailyMetrics.objects.create(
        site=site, date=day, dau=3, visitors=3, pageviews=5, final=True
    )  # (as _store_days leaves it)
    assert not sites.sealed_days(SiteInfo.from_model(site), [day])
    old = datetime.now(UTC).date() - timedelta(days=site.keep_daily_days + 60)
    DailyMetrics.objects.create(site=site, date=old, dau=3, visitors=3, pageviews=5, final=True)
    DailyMetrics.objects.filter(site=site, date=old).update(
        updated=datetime.combine(old + timedelta(days=1), time(1), tzinfo=UTC)
    )
    assert sites.sealed_days(SiteInfo.from_model(site), [old]) == {
        old
    }  # (a row from before the expiries were recorded)


def test_late_page_views_are_kept_for_their_merge_by_the_nightly_expiry(site, r):
    day = _aged_day(r, site, 10)
    before = PageDaily.objects.get(site=site, date=day, path="/pricing").pageviews
    record(
        r,
        SiteInfo.from_model(site),
        [
            Hit(
                datetime.combine(day, time(22), tzinfo=UTC),
                "/pricing",
                "pageview",
                identity_source(None, "late", None, None),
            )
        ],
    )
    expiry.apply_all(r, site, datetime.now(UTC).date())  # (the nightly policy job, before the next rollup)
    assert r.ttl(keys.page_pageviews(site.id, day, "/pricing")) > 0
    roll_recent(r, site)
    assert PageDaily.objects.get(site=site, date=day, path="/pricing").pageviews == before + 1


def test_a_late_bitmap_on_a_day_whose_filter_bitmaps_expired_is_not_taken_for_the_day(site, r):
    """A late visitor of a day whose bitmaps expired makes a fresh bitmap holding them
    alone: a filter on that day keeps its stored numbers, and the rollup drops the bitmap."""
    from analytics.queries import filtered, segments

    day = _aged_day(r, site, 10)
    site.keep_segment_days = 5
    site.save()
    expiry.apply_all(r, site, datetime.now(UTC).date())
    info = SiteInfo.from_model(site)
    filters = segments.parse("page==/pricing")
    stored_value = filtered.daily_values(r, info, filters, day, day, windows=False)[0][day]["dau"]
    record(
        r,
        info,
        [
            Hit(
                datetime.combine(day, time(22), tzinfo=UTC),
                "/pricing",
                "pageview",
                identity_source(None, "late", None, None),
            )
        ],
    )
    assert r.exists(keys.dimension_bitmap(site.id, day, "page\x1f/pricing"))
    assert filtered.daily_values(r, info, filters, day, day, windows=False)[0][day]["dau"] == stored_value
    roll_recent(r, site)
    assert not r.exists(keys.dimension_bitmap(site.id, day, "page\x1f/pricing"))
    assert filtered.daily_values(r, info, filters, day, day, windows=False)[0][day]["dau"] == stored_value + 1


def test_a_pages_visitors_over_history_whose_week_and_month_hlls_are_gone_come_from_their_stored_rows(
    site, r, tmp_path, no_grace
):
    """Once a period's merged page HLLs expire (keep_page_period_days), a page's visitors
    over it are a union of its days' stored sketches (counts/sketches.py), to an HLL's
    error over any range; where the sketches are not there (days rolled up before they
    were kept), its stored row (PagePeriod) over a whole month, and over several periods
    the rows summed times the site's share of distinct people across them (no stated bound)."""
    first = (datetime.now(UTC).date() - timedelta(days=site.keep_page_period_days + 120)).replace(day=1)
    month_end = (first + timedelta(days=32)).replace(day=1) - timedelta(days=1)
    days = days_between(first, month_end + timedelta(days=20))
    lines = log_lines(first, len(days), seed=8, people=600)
    import_("--site", site.domain, write_log(tmp_path / "a.log", lines))
    assert not r.exists(keys.period_visitors(site.id, "month", first, "/pricing"))  # (the policy let it go)
    info = SiteInfo.from_model(site)
    for start, end, bound, kept in (
        (first, month_end, 3 * 0.0081, True),
        (days[0], days[-1], 3 * 0.0081, True),
        (first, month_end, 0.03, False),
        (days[0], days[-1], 0.45, False),  # (several periods from their rows: an estimate, no stated bound)
    ):
        if not kept:
            DaySketch.objects.filter(site=site).delete()
        rows, _ = queries.ranked_pages(r, info, start, end, limit=5)
        for row in rows:
            truth = len(
                {(ip, agent) for ts, ip, agent, page in lines if page == row["page"] and start <= ts.date() <= end}
            )
            assert abs(row["visitors"] - truth) <= max(3, bound * truth), (start, end, row, truth)
