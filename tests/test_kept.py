"""Breakdown parts kept ready over a range's closed days (queries/kept.py): the first view,
the later views and the same breakdown read day by day give the same rows, against brute
force, on days inside and past every expiry; a late event or a rollup is seen at once."""

import io
from datetime import UTC, datetime, time, timedelta

import orjson
import pytest
from django.core.management import call_command

from analytics.models import DailyMetrics
from analytics.queries import filtered, kept, segments
from analytics.queries.breakdown import breakdown, candidate_values
from analytics.queries.pages import candidate_pages, ranked_pages
from analytics.queries.stored import day_totals
from analytics.rollups import expiry
from analytics.rollups.jobs import roll_recent
from analytics.sites import SiteInfo
from analytics.store import keys
from tests.hll import hll_tolerance
from tests.test_segments import COUNTRIES, PAGES, SOURCES, history, send

DIMENSIONS = ["source", "country"]


def rows(r, info, dimension, start, end, monkeypatch, keep=True):
    """{value: row} of a breakdown, with or without kept parts."""
    monkeypatch.setattr(kept, "MIN_DAYS", 3 if keep else 10**6)
    found, total = breakdown(r, info, start, end, dimension, limit=100)
    assert total == len(found)
    return {row[dimension]: row for row in found}


def pages(r, info, start, end, monkeypatch, keep=True, search=""):
    """{path: row} of the top pages, with or without kept parts, and the candidates a
    filtered breakdown would count."""
    monkeypatch.setattr(kept, "MIN_DAYS", 3 if keep else 10**6)
    found, total = ranked_pages(r, info, start, end, 100, search)
    assert total == len(found)
    return {row["page"]: row for row in found}, candidate_pages(r, info, start, end, 100, search)


def truth(brute, dimension, values, days):
    return {
        value: len(set().union(*(brute.by[day, dimension, value] for day in days)))
        for value in values
        if any(brute.by[day, dimension, value] for day in days)
    }


def _rolled(r, site, days):
    call_command("rollup", "--from", days[0].isoformat(), stdout=io.StringIO(), stderr=io.StringIO())
    return SiteInfo.from_model(site)


def _part(r, info, start, end):
    span = [start + timedelta(days=n) for n in range((end - start).days + 1)]
    return kept.Part(r, info, kept.closed_head(info, span), day_totals(info, span))


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_kept_rows_are_the_day_by_day_rows_and_the_truth(site, r, monkeypatch, dimension):
    info, brute, days = history(r, site, 5, visitors=120)
    info = _rolled(r, site, days)
    end = info.today() - timedelta(days=1)  # (the range ends yesterday: its last two days are read as they are)
    values = SOURCES if dimension == "source" else COUNTRIES
    for start in (days[0], days[4], days[-3]):
        day_by_day = rows(r, info, dimension, start, end, monkeypatch, keep=False)
        first = rows(r, info, dimension, start, end, monkeypatch)
        later = rows(r, info, dimension, start, end, monkeypatch)
        assert first == later == day_by_day, start
        want = truth(brute, dimension, values, [d for d in days if d >= start])
        assert set(first) == set(want)
        for value, n in want.items():
            assert abs(first[value]["visitors"] - n) <= hll_tolerance(n), (start, value)
    for start, search in ((days[0], ""), (days[4], "blog")):
        day_by_day = pages(r, info, start, end, monkeypatch, keep=False, search=search)
        assert pages(r, info, start, end, monkeypatch, search=search) == day_by_day, start
        assert pages(r, info, start, end, monkeypatch, search=search) == day_by_day, start
        want = truth(brute, "page", [p for p in PAGES if search in p], [d for d in days if d >= start])
        assert {path: row["visitors"] for path, row in day_by_day[0].items()} == want  # (pages with bitmaps: exact)
    part = _part(r, info, days[0], end)
    made = [keys.kept(info.id, part.token, name) for name in (f"sums:{dimension}", "exact")]
    longest = max(kept.KEEP_MS, _until_midnight(info)) + 1000  # (a second: the server's clock and ours)
    assert all(0 < r.pttl(key) <= longest for key in made)  # (kept, for a while)


def _until_midnight(info):
    """Milliseconds to the site's next midnight."""
    midnight = datetime.combine(info.today() + timedelta(days=1), time(0), tzinfo=info.tz)
    return int((midnight.timestamp() - datetime.now(UTC).timestamp()) * 1000)


def filtered_rows(r, info, text, dimension, start, end, monkeypatch, keep=True):
    """A filtered breakdown's rows (and whether any is estimated), with or without kept parts."""
    monkeypatch.setattr(kept, "MIN_DAYS", 3 if keep else 10**6)
    span = (start, end)
    candidates = (
        candidate_pages(r, info, *span, 200)
        if dimension == "page"
        else candidate_values(r, info, *span, dimension, 200)
    )
    return filtered.breakdown(r, info, segments.parse(text), *span, dimension, candidates)


@pytest.mark.parametrize("text", ["country==DE", "source==Google;country!=FR", "page==/pricing"])
def test_filtered_rows_are_the_day_by_day_rows(site, r, monkeypatch, text):
    info, brute, days = history(r, site, 9, visitors=150)
    info = _rolled(r, site, days)
    end = info.today() - timedelta(days=1)
    for dimension in ("page", "source", "country"):
        for start in (days[0], days[-4]):
            day_by_day = filtered_rows(r, info, text, dimension, start, end, monkeypatch, keep=False)
            assert filtered_rows(r, info, text, dimension, start, end, monkeypatch) == day_by_day, (dimension, start)
            assert filtered_rows(r, info, text, dimension, start, end, monkeypatch) == day_by_day, (dimension, start)
            filters = segments.parse(text)
            for row in day_by_day[0]:
                if not row["estimate"]:
                    truth = set().union(
                        *(brute.segment(d, filters) & brute.by[d, dimension, row["value"]] for d in days if d >= start)
                    )
                    assert row["visitors"] == len(truth), (dimension, row)


def test_a_late_event_is_counted_at_once(site, r, monkeypatch):
    """A late event changes a closed day's keys at once (its value's visitors), and its
    rows once the recent rollup has taken the dirty day (a new value's row)."""
    info, brute, days = history(r, site, 6, visitors=80)
    info = _rolled(r, site, days)
    end = info.today() - timedelta(days=1)
    before = rows(r, info, "country", days[0], end, monkeypatch)
    pages_before = pages(r, info, days[0], end, monkeypatch)[0]
    token = _part(r, info, days[0], end).token
    late = datetime.combine(days[3], time(12), tzinfo=UTC)
    send(r, site, [(late, 10_001, "p", "/", "Google", "JP"), (late, 10_002, "p", "/new", "Google", "DE")])
    assert _part(r, info, days[0], end).token != token  # (the day was closed: the epoch moved)
    after = rows(r, info, "country", days[0], end, monkeypatch)
    assert after["DE"]["visitors"] == before["DE"]["visitors"] + 1
    assert after["US"] == before["US"]
    assert after == rows(r, info, "country", days[0], end, monkeypatch, keep=False)
    pages_after = pages(r, info, days[0], end, monkeypatch)
    assert pages_after[0]["/"]["visitors"] == pages_before["/"]["visitors"] + 1
    assert pages_after == pages(r, info, days[0], end, monkeypatch, keep=False)
    roll_recent(r, site)
    rolled = rows(r, info, "country", days[0], end, monkeypatch)
    assert rolled["JP"]["visitors"] == 1 and rolled["JP"]["pageviews"] == 1
    assert rolled["DE"]["pageviews"] == before["DE"]["pageviews"] + 1
    assert rolled == rows(r, info, "country", days[0], end, monkeypatch, keep=False)
    pages_rolled = pages(r, info, days[0], end, monkeypatch)
    assert pages_rolled[0]["/new"]["visitors"] == 1
    assert pages_rolled == pages(r, info, days[0], end, monkeypatch, keep=False)


def test_a_rollup_of_closed_days_moves_the_epoch_and_today_does_not(site, r, monkeypatch):
    info, _, days = history(r, site, 7, visitors=40)
    info = _rolled(r, site, days)
    end = info.today() - timedelta(days=1)
    token = _part(r, info, days[0], end).token
    send(r, site, [(datetime.now(UTC), 10_003, "p", "/", "Google", "US")])  # (today's event: no closed day moved)
    assert _part(r, info, days[0], end).token == token
    _rolled(r, site, days[-2:])
    assert _part(r, info, days[0], end).token != token


def test_yesterdays_late_event_leaves_the_parts_and_an_older_days_moves_only_its_own(site, r):
    """Each day has its own epoch: an event of yesterday (no part holds it: heads end the
    day before) changes no token, one of an older day changes the tokens of the heads
    that hold that day only."""
    info, _, days = history(r, site, 6, visitors=60)
    info = _rolled(r, site, days)
    today = info.today()
    to_today, earlier = _part(r, info, days[0], today), _part(r, info, days[0], days[-3])
    yesterday = datetime.combine(today - timedelta(days=1), time(12), tzinfo=UTC)
    send(r, site, [(yesterday, 10_004, "p", "/", "Google", "US")])
    assert _part(r, info, days[0], today).token == to_today.token
    assert _part(r, info, days[0], days[-3]).token == earlier.token
    send(r, site, [(datetime.combine(days[-2], time(12), tzinfo=UTC), 10_005, "p", "/", "Google", "US")])
    assert _part(r, info, days[0], today).token != to_today.token  # (days[-2] is in its head)
    assert _part(r, info, days[0], days[-3]).token == earlier.token  # (not in this one's)


def test_parts_live_an_hour_and_the_warm_ups_until_midnight(site, r, monkeypatch):
    """A view's parts live KEEP_MS; the warm-up's (kept.until_midnight()), over a head
    ending the day before yesterday, until the site's midnight, and so do the parts a view
    made before it that it reads; a head ending earlier keeps KEEP_MS. The reads of heads
    ending the day before yesterday are noted for the warm-up, and only those."""
    info, _, days = history(r, site, 6, visitors=60)
    info = _rolled(r, site, days)
    today = info.today()

    def ttl(start, end, lasting=False):
        if lasting:
            with kept.until_midnight():
                rows(r, info, "country", start, end, monkeypatch)
        else:
            rows(r, info, "country", start, end, monkeypatch)
        part = _part(r, info, start, end)
        return [r.pttl(keys.kept(info.id, part.token, name)) for name in ("sums:country", "exact")]

    assert all(0 < n <= kept.KEEP_MS for n in ttl(days[0], today))
    until = _until_midnight(info)
    lasting = ttl(days[0], today, lasting=True)  # (the view's part, read by the warm-up: it lasts now)
    assert all(min(until, kept.KEEP_MS) - 60_000 < n <= max(until, kept.KEEP_MS) + 1000 for n in lasting)
    if until > kept.KEEP_MS + 60_000:  # (but in the hour before midnight)
        assert all(n > kept.KEEP_MS for n in lasting)
    assert all(0 < n <= kept.KEEP_MS for n in ttl(days[0], days[-3], lasting=True))  # (a head ending earlier)
    noted = {f.decode() for f in r.hgetall(keys.kept_read(info.id))}
    assert noted == {f"{(today - days[0]).days}:sums:country"}
    assert 0 < r.ttl(keys.kept_read(info.id)) <= kept.READ_DAYS * 86400


def test_the_first_rollup_after_midnight_warms_the_parts_read_lately(site, r, monkeypatch):
    """Parts read (noted), the first rollup job of the day (the five-minute one, as beat
    runs it: it rolls yesterday up as final) makes them again for the new heads, once:
    a view afterwards makes nothing, and reads what the day-by-day read gives. Notes past
    READ_DAYS, and of nothing, go."""
    from analytics import tasks
    from analytics.queries import warm

    info, _, days = history(r, site, 8, visitors=100)
    info = _rolled(r, site, days)
    today = info.today()

    def view():
        return rows(r, info, "country", days[0], today, monkeypatch), pages(r, info, days[0], today, monkeypatch)[0]

    def parts():
        return set(r.scan_iter(match=keys.kept(info.id, "*", "*"), count=1000))

    view()  # (read yesterday: noted)
    back = (today - days[0]).days
    read = {f"{back}:sums:country", f"{back}:pages"}
    assert {f.decode() for f in r.hgetall(keys.kept_read(info.id))} == read
    old = int((datetime.now(UTC).timestamp() - kept.READ_DAYS * 86400 - 60) * 1000)
    r.hset(keys.kept_read(info.id), mapping={"3:sums:source": old, "x:y": 0})
    for key in parts():  # (a new day: none of yesterday's heads is today's)
        r.unlink(key)
    send(
        r, site, [(datetime.combine(days[2], time(12), tzinfo=UTC), 10_006, "p", "/", "Google", "US")]
    )  # (a late event: dirty)
    tasks.rollup_site(site.pk, "recent")
    assert {f.decode() for f in r.hgetall(keys.kept_read(info.id))} == read
    made = parts()
    token = _part(r, info, days[0], today).token
    assert {key for key in made if token.encode() in key}  # (the new head's parts, before any view)
    until = _until_midnight(info)
    if until > kept.KEEP_MS + 60_000:
        assert all(r.pttl(key) > kept.KEEP_MS for key in made)
    assert warm.nightly(r, info) == []  # (once a day)
    warm_view = view()
    assert parts() == made  # (the view made nothing)
    day_by_day = rows(r, info, "country", days[0], today, monkeypatch, keep=False)
    assert warm_view == (day_by_day, pages(r, info, days[0], today, monkeypatch, keep=False)[0])
    out = io.StringIO()  # (an operator's rollup warms the same way)
    call_command("rollup", "--from", days[-1].isoformat(), stdout=out, stderr=io.StringIO())
    assert f"{site.domain}: 2 breakdowns read lately made ready" in out.getvalue()


def test_the_warm_up_takes_the_ranges_read_last_a_few_a_night(site, r, monkeypatch):
    """The warm-up makes the parts of the HEADS ranges read most recently (by days back)."""
    from analytics.queries import warm

    info, _, days = history(r, site, 6, visitors=40)
    info = _rolled(r, site, days)
    monkeypatch.setattr(warm, "HEADS", 1)
    longer, shorter = ((info.today() - day).days for day in days[:2])
    now = int(datetime.now(UTC).timestamp() * 1000)
    read = {f"{longer}:sums:country": now, f"{longer}:pages": now - 1000, f"{shorter}:sums:source": now - 2000}
    r.hset(keys.kept_read(info.id), mapping=read)
    assert sorted((back, dimension) for back, dimension, _ in warm.warm(r, info)) == [
        (longer, "country"),
        (longer, "page"),
    ]


def test_a_visit_into_an_older_day_moves_that_days_counter(site, r):
    """A visit begun on a closed day and continued by an event of the next day (sent on
    its own, later) adds to the day it began on: that day's counter moves (lib/visits.lua),
    and the parts over it go."""
    info, _, days = history(r, site, 6, visitors=40)
    info = _rolled(r, site, days)
    began = datetime.combine(days[-2], time(23, 55), tzinfo=UTC)
    send(r, site, [(began, 10_007, "p", "/", "Google", "US")])
    earlier = _part(r, info, days[0], days[-2]).token  # (a head holding the day the visit began on)
    send(r, site, [(began + timedelta(minutes=10), 10_007, "p", "/pricing", "Google", "US")])
    assert _part(r, info, days[0], days[-2]).token != earlier


def _lower_policy(r, site, days, **keep):
    """As if each day had been rolled up the night after it (no import's grace), the
    site's expiry policy set to `keep` (keep_page_days=...) and applied: its SiteInfo."""
    for day in days:
        DailyMetrics.objects.filter(site=site, date=day).update(
            updated=datetime.combine(day + timedelta(days=1), time(1), tzinfo=UTC)
        )
    for name, value in keep.items():
        setattr(site, name, value)
    site.save()
    expiry.apply_all(r, site, datetime.now(UTC).date())
    return SiteInfo.from_model(site)


def test_past_every_expiry_kept_rows_are_the_day_by_day_rows(site, r, monkeypatch):
    """keep_page_days, keep_segment_days and keep_daily_days passed for some of the days:
    the kept part unions the gone days' sketches as the day-by-day read does."""
    info, brute, days = history(r, site, 11, visitors=160)
    _rolled(r, site, days)
    info = _lower_policy(r, site, days, keep_page_days=3, keep_segment_days=6, keep_daily_days=9)
    end = info.today() - timedelta(days=1)
    part = _part(r, info, days[0], end)
    assert part.gone  # (some days' raw keys are gone: their sketches count)
    counters = {f.decode() for f in r.hkeys(keys.closed_epochs(info.id))}
    assert counters and not counters & {day.isoformat() for day in part.gone}  # (no write reaches a sealed day)
    for dimension in DIMENSIONS:
        day_by_day = rows(r, info, dimension, days[0], end, monkeypatch, keep=False)
        assert rows(r, info, dimension, days[0], end, monkeypatch) == day_by_day
        assert rows(r, info, dimension, days[0], end, monkeypatch) == day_by_day
        values = SOURCES if dimension == "source" else COUNTRIES
        for value, n in truth(brute, dimension, values, days).items():
            assert abs(day_by_day[value]["visitors"] - n) <= max(2, 0.03 * n), (dimension, value)
    day_by_day_pages = pages(r, info, days[0], end, monkeypatch, keep=False)
    assert pages(r, info, days[0], end, monkeypatch) == day_by_day_pages
    assert pages(r, info, days[0], end, monkeypatch) == day_by_day_pages
    for text in ("country==DE", "page==/pricing"):  # (filtered rows: their candidates from the kept sums)
        day_by_day_filtered = filtered_rows(r, info, text, "source", days[0], end, monkeypatch, keep=False)
        assert filtered_rows(r, info, text, "source", days[0], end, monkeypatch) == day_by_day_filtered, text
    # The night's warm-up over the same days (the parts dropped, made again from the reads
    # noted, lasting): the views after it read what the day-by-day read gives.
    from analytics.queries import warm

    for key in list(r.scan_iter(match=keys.kept(info.id, "*", "*"), count=1000)):
        r.unlink(key)
    assert {dimension for _, dimension, _ in warm.warm(r, info)} == {*DIMENSIONS, "page"}
    for dimension in DIMENSIONS:
        assert rows(r, info, dimension, days[0], end, monkeypatch) == rows(
            r, info, dimension, days[0], end, monkeypatch, keep=False
        )
    assert pages(r, info, days[0], end, monkeypatch) == day_by_day_pages
    for text in ("country==DE", "page==/pricing"):
        day_by_day_filtered = filtered_rows(r, info, text, "source", days[0], end, monkeypatch, keep=False)
        assert filtered_rows(r, info, text, "source", days[0], end, monkeypatch) == day_by_day_filtered, text


def _past_every_expiry(r, site):
    """12 days of history rolled up as each night would have (no import's grace), then the
    policy lowered past every expiry (keep_page_days 3, keep_segment_days 6,
    keep_daily_days 9) and applied: (SiteInfo, the days, yesterday)."""
    _, _, days = history(r, site, 12, visitors=120)
    _rolled(r, site, days)
    info = _lower_policy(r, site, days, keep_page_days=3, keep_segment_days=6, keep_daily_days=9)
    end = info.today() - timedelta(days=1)
    return info, days, end


def _aged_backfill(site, r, monkeypatch, age):
    """A history past every expiry (keep_page_days 3, keep_segment_days 6, keep_daily_days
    9), then one new visitor's pageview sent to the day `age` days ago: (info, end, the
    kept country rows before, and the kept country rows and pages at once and after the
    recent rollup, each checked against the day-by-day read)."""
    info, days, end = _past_every_expiry(r, site)
    with kept.until_midnight():  # (as the night's warm-up made it: the part lasts until midnight)
        before = rows(r, info, "country", days[0], end, monkeypatch)
    late = datetime.combine(info.today() - timedelta(days=age), time(12), tzinfo=UTC)
    send(r, site, [(late, 20_001, "p", "/backfilled", "Google", "JP")])
    seen = []
    for rolled in (False, True):
        if rolled:
            roll_recent(r, site)
        kept_rows = rows(r, info, "country", days[0], end, monkeypatch)
        assert kept_rows == rows(r, info, "country", days[0], end, monkeypatch, keep=False), rolled
        kept_pages = pages(r, info, days[0], end, monkeypatch)
        assert kept_pages == pages(r, info, days[0], end, monkeypatch, keep=False), rolled
        for value in COUNTRIES:
            assert kept_rows[value]["visitors"] >= before[value]["visitors"] > 0, (rolled, value)
        seen.append((kept_rows, kept_pages[0]))
    return seen[-1]


@pytest.mark.parametrize("age", [14, 8, 4])  # (past keep_daily_days, past keep_segment_days, past keep_page_days)
def test_a_backfill_past_an_expiry_reads_kept_as_day_by_day(site, r, monkeypatch, age):
    """An event sent to a day whose keys the policy let go: the kept read moves with it at
    once and after the recent rollup as the day-by-day read does; no value falls, none
    reads 0; within keep_daily_days the new visitor is counted once the day is rolled up
    again."""
    countries, top = _aged_backfill(site, r, monkeypatch, age)
    if age <= site.keep_daily_days:
        assert countries["JP"]["visitors"] == 1 and top["/backfilled"]["visitors"] == 1


def test_a_backfill_to_a_sealed_day_is_refused_by_name_and_moves_nothing(client, site, r, monkeypatch):
    """Past keep_daily_days a rolled-up day's keys are gone and its rows are the record:
    the batch API refuses an event for it by name (rollups never read that day's keys
    again, so accepting it would count it nowhere), counts the good event beside it, and
    the kept rows, like the day-by-day ones, stay as they were."""
    info, days, end = _past_every_expiry(r, site)
    before = rows(r, info, "country", days[0], end, monkeypatch)
    late = info.today() - timedelta(days=14)
    body = [
        {"url": "https://example.com/backfilled", "visitor": "v20001", "ts": f"{late}T12:00:00Z"},
        {"url": "https://example.com/", "visitor": "v20002"},
    ]
    answer = client.post(
        "/api/v1/events",
        orjson.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {site.create_api_key('backfill')}",
    ).json()
    assert answer["accepted"] == 1 and [row["index"] for row in answer["rejected"]] == [0]
    assert (
        f"{late} was rolled up" in answer["rejected"][0]["error"]
        and "keep_daily_days" in answer["rejected"][0]["error"]
    )
    roll_recent(r, site)
    assert rows(r, info, "country", days[0], end, monkeypatch) == before
    assert rows(r, info, "country", days[0], end, monkeypatch, keep=False) == before


def test_a_day_whose_keys_expire_within_minutes_is_refused_before_they_go(client, make_site, r):
    """An event checked a moment before its day's keys expire, written a moment after,
    would be acknowledged and land on a sealed day: the batch API refuses days whose keys
    go within sites.REFUSE_AHEAD, and takes a day whose keys stay longer."""
    from analytics import sites

    site, key = make_site()
    now = datetime.now(UTC)
    soon, later = ((now - timedelta(days=n)).date() for n in (40, 41))
    for day, until in ((soon, now + sites.REFUSE_AHEAD / 2), (later, now + sites.REFUSE_AHEAD * 2)):
        DailyMetrics.objects.create(site=site, date=day, dau=1, visitors=1, pageviews=1, final=True, keys_until=until)
    body = [{"url": "https://example.com/", "visitor": "v1", "ts": f"{day}T12:00:00Z"} for day in (soon, later)]
    answer = client.post(
        "/api/v1/events", orjson.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    ).json()
    assert answer["accepted"] == 1 and [row["index"] for row in answer["rejected"]] == [0]


@pytest.mark.parametrize("past", [False, True])  # (True: keep_page_days passed for most days)
@pytest.mark.parametrize("text", ["country==DE", "source==Google;country!=FR", "page==/pricing"])
def test_rows_out_of_reach_of_the_page_shown_leave_it_and_the_total_as_they_were(site, r, monkeypatch, text, past):
    """With the rows shown and the candidates' bounds, a filtered breakdown skips the
    unions of estimated rows that cannot reach them: the rows shown, their number, and
    whether the answer has an estimate are what counting every union gives, inside and
    past the page keys' expiry (the days past keep_segment_days and keep_daily_days are
    read from stored rows, which take no bounds: test_past_every_expiry_*)."""
    info, _, days = history(r, site, 9, visitors=160, segment_values=2)  # (two bitmaps a dimension a day)
    tail = [  # (a long tail: 24 values of each dimension, 8 new visitors each a day, never given a bitmap)
        (datetime.combine(day, time(10 + j % 8), tzinfo=UTC), 20_000 + n * 1000 + k * 10 + j, "p", f"/tail/{k}")
        + (f"tail {k}", f"T{k}")
        for n, day in enumerate(days)
        for k in range(24)
        for j in range(8)
    ]
    send(r, site, tail)
    info = _rolled(r, site, days)
    if past:  # (the days' own keys and bitmaps live on: their rows are not stored-only)
        info = _lower_policy(r, site, days, keep_page_days=3)
    end = info.today() - timedelta(days=1)
    skipped = []
    out_of_reach = filtered._out_of_reach
    monkeypatch.setattr(filtered, "_out_of_reach", lambda *a: skipped.append(out_of_reach(*a)) or skipped[-1])
    filters = segments.parse(text)
    for dimension in ("page", "source", "country"):
        for start in (days[0], days[-5]):
            bounds: dict = {}
            candidates = (
                candidate_pages(r, info, start, end, 200, bounds=bounds)
                if dimension == "page"
                else candidate_values(r, info, start, end, dimension, 200, bounds=bounds)
            )
            every, estimate = filtered.breakdown(r, info, filters, start, end, dimension, candidates)
            for shown in (1, 2, 3):
                cut, cut_estimate = filtered.breakdown(
                    r, info, filters, start, end, dimension, candidates, bounds=bounds, shown=shown
                )
                assert cut[:shown] == every[:shown], (dimension, start, shown)
                assert len(cut) == len(every) and cut_estimate == estimate, (dimension, start, shown)
    assert past or any(skipped)  # (some rows were out of reach: the check above was not of nothing)
    if past:  # (the page keys of the older days are gone: the first range took no bounds for pages)
        assert not r.exists(keys.page_visitors(site.pk, days[0], "/"))
