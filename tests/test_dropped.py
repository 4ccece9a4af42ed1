"""What a site does not count, and why (issue 37, items 3 and 5): a visitor past the
site's inhuman rate is dropped for the day; every dropped event is counted by reason, on
every day (past every expiry: the rollup's row), and shown by the read API and the
dashboard; a clean stream of people drops nothing."""

import io
import json
from collections import Counter
from datetime import UTC, datetime, time, timedelta

import pytest
from django.core.management import call_command

from analytics import queries
from analytics.dropped import EXCLUSION, PATTERN, REASONS, REFERRER_SPAM, USER_AGENT
from analytics.ingest.patterns import WINDOW
from analytics.models import ApiKey, DailyMetrics, Exclusion
from analytics.periods import days_between
from analytics.sites import SiteInfo
from team.roles import add_member
from tests.test_api_event import CHROME, post, today_row

pytestmark = pytest.mark.one_leg  # (Python at the edge, one small script: the same on every server)

# Real browsers, as they send their User-Agent in 2026 (none a crawler's)
BROWSERS = [
    CHROME,
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 "
    "Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 "
    "Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile "
    "Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
    "Safari/537.36 Edg/131.0.0.0",
    "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S921B) AppleWebKit/537.36 (KHTML, like Gecko) "
    "SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36",
]
# Residential and mobile networks' addresses (documentation ranges are no one's data centre either)
HOMES = ["81.2.69.160", "92.184.105.98", "24.48.0.1", "2a02:c7c:1::1", "2003:e8:1::1", "198.51.100.23"]


def batch(client, site, events, **query):
    key = ApiKey.create(site)
    suffix = "?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""
    return client.post(
        "/api/v1/events" + suffix,
        data=json.dumps(events),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()


def dropped_api(client, site, **span):
    key = ApiKey.objects.filter(site=site).first() or None
    token = ApiKey.create(site) if key is None else None
    answer = client.get(
        "/api/v1/stats/dropped",
        {"site": site.domain, **span},
        HTTP_AUTHORIZATION=f"Bearer {token or ApiKey.create(site)}",
    )
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_a_clean_stream_of_people_drops_nothing(client, site, r):
    events = [
        {"url": f"https://example.com/p{n % 5}", "ip": HOMES[n % len(HOMES)], "user_agent": BROWSERS[n % len(BROWSERS)],
         "referrer": "https://www.google.com/"}
        for n in range(42)
    ]  # fmt: skip
    answer = batch(client, site, events)
    assert (answer["accepted"], answer["bots_dropped"], answer["rejected"]) == (42, 0, [])
    for n, ua in enumerate(BROWSERS):
        single = post(client, {"name": "pageview", "url": "https://example.com/", "domain": "example.com"}, ua=ua,
                      REMOTE_ADDR=HOMES[n % len(HOMES)])  # fmt: skip
        assert single.status_code == 202 and "X-Tally-Dropped" not in single
    assert today_row(r, site)["pageviews"] == 42 + len(BROWSERS)
    assert dropped_api(client, site, period="day")["total"] == 0


def test_a_flood_from_one_visitor_is_dropped_past_the_rate_and_for_the_rest_of_the_day(client, site, r):
    """400 pageviews in 5 minutes from one visitor (a browser's User-Agent, a home
    address): the first 300 count, the rest and every later event that day are dropped
    as a pattern; a person beside them and the same visitor the next day count."""
    start = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0) - timedelta(days=3)
    flood = [
        {"url": f"https://example.com/item/{n}", "visitor": "scraper", "ts": (start + timedelta(seconds=n * 0.75)).isoformat()}
        for n in range(400)
    ]  # fmt: skip
    person = [
        {"url": f"https://example.com/read/{n}", "visitor": "reader", "ts": (start + timedelta(seconds=n * 30)).isoformat()}
        for n in range(12)
    ]  # fmt: skip
    answer = batch(client, site, flood[:250] + person)
    assert (answer["accepted"], answer["bots_dropped"]) == (262, 0)
    answer = batch(client, site, flood[250:])
    assert (answer["accepted"], answer["bots_dropped"], answer["dropped"]) == (50, 100, {PATTERN: 100})
    later = [{"url": "https://example.com/", "visitor": "scraper", "ts": (start + timedelta(hours=3)).isoformat(),
              "name": "Signup"}]  # fmt: skip
    assert batch(client, site, later)["dropped"] == {PATTERN: 1}
    next_day = [{"url": "https://example.com/", "visitor": "scraper", "ts": (start + timedelta(days=1)).isoformat()}]
    assert batch(client, site, next_day)["accepted"] == 1

    info = SiteInfo.from_model(site)
    day = start.astimezone(info.tz).date()
    row = queries.timeseries(r, info, day, day)[0]
    assert (row["pageviews"], row["visitors"]) == (
        300 + 12,
        2,
    )  # (brute force: the first 300 of theirs, and the reader's)
    assert dropped_api(client, site, **{"from": day.isoformat(), "to": day.isoformat()})["reasons"][PATTERN] == 101


def test_the_rate_is_a_site_setting_and_zero_switches_it_off(client, site, r):
    site.pattern_pageviews = 0
    site.save()
    now = datetime.now(UTC)
    flood = [{"url": f"https://example.com/{n}", "visitor": "x", "ts": (now - timedelta(seconds=n)).isoformat()}
             for n in range(400)]  # fmt: skip
    assert batch(client, site, flood)["accepted"] == 400
    site.pattern_pageviews = 10
    site.save()
    # (one whole window: the last 15 seconds straddled two of them once in 40 runs)
    start = datetime.fromtimestamp((int(now.timestamp()) // WINDOW - 1) * WINDOW, UTC)
    more = [{"url": f"https://example.com/{n}", "visitor": "y", "ts": (start + timedelta(seconds=n)).isoformat()}
            for n in range(15)]  # fmt: skip
    assert batch(client, site, more)["dropped"] == {PATTERN: 5}


def test_single_events_past_the_rate_are_dropped_too(client, site, r):
    site.pattern_pageviews = 5
    site.save()
    view = {"name": "pageview", "url": "https://example.com/", "domain": "example.com"}
    for _ in range(8):
        assert post(client, view, REMOTE_ADDR="81.2.69.160").status_code == 202
    assert today_row(r, site)["pageviews"] == 5
    info = SiteInfo.from_model(site)
    assert queries.run(r, queries.Query(info, info.today(), info.today(), "dropped")).totals[PATTERN] == 3


def test_every_reason_is_counted_on_every_day_past_every_expiry(client, site, r):
    """Events dropped for each reason over 9 days, counted the obvious way; the read API
    says the same numbers while the days' keys live and after the policy expired them
    (the rollup's rows)."""
    from analytics.rollups import expiry

    Exclusion.objects.create(site=site, kind="path", value="/admin/**")
    site.pattern_pageviews = 20
    site.save()
    today = datetime.now(UTC).date()
    days = days_between(today - timedelta(days=10), today - timedelta(days=2))
    truth = Counter()
    events = []
    for n, day in enumerate(days):
        at = datetime.combine(day, time(10), tzinfo=UTC)
        for v in range(n + 1):
            events.append({"url": "https://example.com/", "visitor": f"c{v}", "user_agent": "curl/8.5.0",
                           "ts": at.isoformat()})  # fmt: skip
            truth[USER_AGENT] += 1
        for v in range(2):
            events.append({"url": "https://example.com/", "visitor": f"s{v}", "ts": at.isoformat(),
                           "referrer": "https://0-0.fr/cheap"})  # fmt: skip
            truth[REFERRER_SPAM] += 1
        events.append({"url": "https://example.com/admin/x", "visitor": "me", "ts": at.isoformat()})
        truth[EXCLUSION] += 1
        for k in range(20 + n):
            events.append({"url": f"https://example.com/{k}", "visitor": f"bot{n}",
                           "ts": (at + timedelta(seconds=k)).isoformat()})  # fmt: skip
        truth[PATTERN] += n
        events.append({"url": "https://example.com/", "visitor": f"person{n}", "ts": at.isoformat()})
    answer = batch(client, site, events)
    assert answer["rejected"] == [] and answer["excluded"] == truth[EXCLUSION]
    span = {"from": days[0].isoformat(), "to": days[-1].isoformat()}
    expected = {reason: truth[reason] for reason in REASONS}
    expected["datacenter"] = 0
    live = dropped_api(client, site, **span)
    assert live["reasons"] == expected and live["total"] == sum(truth.values())
    assert len(live["days"]) == len(days)

    call_command("rollup", "--from", days[0].isoformat(), stdout=io.StringIO(), stderr=io.StringIO())
    for day in days:
        DailyMetrics.objects.filter(site=site, date=day).update(
            updated=datetime.combine(day + timedelta(days=1), time(1), tzinfo=UTC)
        )
    site.keep_page_days, site.keep_segment_days, site.keep_daily_days = 2, 4, 6
    site.save()
    expiry.apply_all(r, site, today)
    from analytics.store import keys

    assert not r.exists(keys.dropped(site.pk, days[0]))  # (its keys are gone: the row answers)
    past = dropped_api(client, site, **span)
    assert past["reasons"] == expected and past["days"] == live["days"]
    # A late event for an expired day (a spool replay, say) makes a new, partial hash: the
    # day's row still counts, not the one event.
    from analytics.ingest import Hit, record

    late = Hit(datetime.combine(days[0], time(11), tzinfo=UTC), "/", "pageview", b"late", bot=REFERRER_SPAM)
    record(r, SiteInfo.from_model(site), [late])
    assert r.hget(keys.dropped(site.pk, days[0]), REFERRER_SPAM) == b"1"
    assert dropped_api(client, site, **span)["reasons"] == expected


def test_the_dashboard_says_what_was_not_counted_and_links_the_switches(client, site, django_user_model):
    owner = django_user_model.objects.create_user("owner", "o@example.org", "pw-12345678-long")
    add_member(site, owner, "owner")
    post(client, {"name": "pageview", "url": "https://example.com/", "domain": "example.com"}, REMOTE_ADDR="81.2.69.1")
    post(client, {"name": "pageview", "url": "https://example.com/", "domain": "example.com"}, ua="curl/8.5.0")
    post(client, {"name": "pageview", "url": "https://example.com/", "domain": "example.com",
                  "referrer": "https://0-0.fr/"}, REMOTE_ADDR="81.2.69.2")  # fmt: skip
    client.force_login(owner)
    page = client.get(f"/dashboard/{site.domain}/?period=day").content.decode()
    assert "Not counted in this period: 2 events (1 bots by user agent, 1 referrer spam)." in page
    assert f"/dashboard/{site.domain}/settings/advanced" in page
    filtered = client.get(f"/dashboard/{site.domain}/?period=day&filters=page%3D%3D%2F").content.decode()
    assert "Not counted in this period" not in filtered  # (dropped events have no audience)


VIEW = {"name": "pageview", "url": "https://example.com/", "domain": "example.com"}


@pytest.mark.parametrize(
    "ip, dropped",
    [("3.5.140.2", True), ("2600:1f18::1", True), ("::ffff:3.5.140.2", True), ("20.42.0.1", True),
     ("81.2.69.160", False), ("2a02:c7c:1::1", False)],
)  # fmt: skip
def test_an_event_from_a_data_centre_is_dropped_and_says_so(client, site, r, ip, dropped):
    from analytics.ingest.datacenters import provider

    assert (provider(ip) is not None) is dropped  # (the vendored ranges say so: amazon, microsoft, or none)
    answer = post(client, VIEW, REMOTE_ADDR=ip)
    assert answer.status_code == 202 and answer.get("X-Tally-Dropped") == ("datacenter" if dropped else None)
    assert today_row(r, site)["pageviews"] == (0 if dropped else 1)


def test_a_site_may_count_data_centres_and_a_batch_names_them(client, site, r):
    events = [
        {"url": "https://example.com/", "visitor": "a", "ip": "3.5.140.2"},
        {"url": "https://example.com/", "visitor": "b", "ip": "2600:1f18::1"},
        {"url": "https://example.com/", "visitor": "c", "ip": "81.2.69.160"},
        {"url": "https://example.com/", "visitor": "d"},  # (no address: nothing to look up)
    ]
    answer = batch(client, site, events)
    assert (answer["accepted"], answer["bots_dropped"], answer["dropped"]) == (2, 2, {"datacenter": 2})
    assert batch(client, site, events, bots="keep")["accepted"] == 4  # (the sender knows its traffic)
    site.drop_datacenters = False
    site.save()
    assert "X-Tally-Dropped" not in post(client, VIEW, REMOTE_ADDR="3.5.140.2")
    assert today_row(r, site)["pageviews"] == 2 + 4 + 1


def test_a_crawler_only_the_second_list_knows_is_dropped(client, site, r):
    """Perplexity-User fetches a page for a person in a chat, never a browser's visit:
    crawlerdetect misses it, crawler-user-agents names it."""
    agent = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)"
    from crawlerdetect import CrawlerDetect

    assert not CrawlerDetect().isCrawler(agent)
    answer = post(client, VIEW, ua=agent, REMOTE_ADDR="81.2.69.160")
    assert answer["X-Tally-Dropped"] == "bot" and today_row(r, site)["pageviews"] == 0
    site.drop_crawlers = False
    site.save()
    assert "X-Tally-Dropped" not in post(client, VIEW, ua=agent, REMOTE_ADDR="81.2.69.160")


def test_the_advanced_page_and_the_admin_show_the_counts_the_switches_and_the_lists_dates(
    client, site, r, django_user_model
):
    post(client, VIEW, REMOTE_ADDR="3.5.140.2")
    owner = django_user_model.objects.create_user("owner", "o@example.org", "pw-12345678-long", is_staff=True,
                                                  is_superuser=True)  # fmt: skip
    add_member(site, owner, "owner")
    client.force_login(owner)
    page = client.get(f"/dashboard/{site.domain}/settings/advanced").content.decode()
    assert 'Data-centre addresses</td><td class="num">1</td>' in page
    assert "data-centre ranges (lord-alfred/ipranges) of 2026-" in page and 'name="drop_datacenters"' in page
    admin = client.get(f"/admin/analytics/site/{site.pk}/change/").content.decode()
    assert "Bot filters" in admin and "referrer spam (Matomo): 2026-" in admin


def test_a_hits_digests_are_its_last_field():
    """patterns.screen() builds a hit with its digests by position (a third of _replace()'s
    cost): a field added after them would take them silently."""
    from analytics.ingest.record import Hit

    assert Hit._fields[-1] == "digests"
