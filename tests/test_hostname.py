"""The hostname dimension: the host a visit landed on, as Plausible names it (no "www.",
no port), counted, broken down and filtered like any visit dimension, against the events."""

from datetime import UTC, datetime, timedelta

import pytest

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.ingest.visit import hostname_of, visit_attrs
from analytics.queries import filtered, segments
from analytics.sites import SiteInfo


@pytest.mark.parametrize(
    "url, host",
    [
        ("https://www.Example.com/pricing?x=1", "example.com"),
        ("https://staging.example.com:8443/#top", "staging.example.com"),
        ("http://user@blog.example.com/a", "blog.example.com"),
        ("https://[2001:db8::1]/", "[2001:db8::1]"),
        ("/just/a/path", ""),
    ],
)
def test_a_urls_hostname(url, host):
    assert hostname_of(url) == host


def test_visitors_by_hostname_and_filtered_by_it_are_the_events(site, r):
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC).replace(hour=12, minute=0)
    hosts = {f"v{n}": ["www.example.com", "staging.example.com", "docs.example.com"][n % 3] for n in range(30)}
    hits = [
        Hit(
            now - timedelta(minutes=n),
            "/",
            "pageview",
            identity_source(None, visitor, None, None),
            attrs=visit_attrs("example.com", f"https://{host}/", None, None, None, None),
        )
        for n, (visitor, host) in enumerate(hosts.items())
    ]
    record(r, info, hits, now=now)
    day = now.date()
    rows, _ = filtered.breakdown(r, info, (), day, day, "hostname", ["example.com", "staging.example.com"])
    assert {row["value"]: row["visitors"] for row in rows} == {"example.com": 10, "staging.example.com": 10}
    for text, expected in (("hostname==staging.example.com", 10), ("hostname!=staging.example.com", 20)):
        values, estimated = filtered.daily_values(r, info, segments.parse(text), day, day, windows=False)
        assert values[day]["dau"] == expected and not estimated, text


def test_a_hostname_filter_is_right_past_every_expiry(site, r):
    """Days rolled up, then the policy lowered past them: a hostname's visitors are its
    bitmap's while it lasts, its stored row after (an estimate, never 0)."""
    import io
    from datetime import time

    from django.core.management import call_command

    from analytics.models import DailyMetrics
    from analytics.periods import days_between
    from analytics.rollups import expiry

    info = SiteInfo.from_model(site)
    today = datetime.now(UTC).date()
    days = days_between(today - timedelta(days=10), today - timedelta(days=2))
    truth = {}
    hits = []
    for n, day in enumerate(days):
        for v in range(12 + n):
            host = "staging.example.com" if v % 3 == 0 else "example.com"
            truth.setdefault(day, set()).add(v) if host.startswith("staging") else None
            at = datetime.combine(day, time(9), tzinfo=UTC) + timedelta(minutes=v)
            attrs = visit_attrs("example.com", f"https://{host}/", None, None, None, None)
            hits.append(Hit(at, "/", "pageview", identity_source(None, f"d{n}v{v}", None, None), attrs=attrs))
    record(r, info, hits)
    call_command("rollup", "--from", days[0].isoformat(), stdout=io.StringIO(), stderr=io.StringIO())
    for day in days:
        DailyMetrics.objects.filter(site=site, date=day).update(
            updated=datetime.combine(day + timedelta(days=1), time(1), tzinfo=UTC)
        )
    site.keep_page_days, site.keep_segment_days, site.keep_daily_days = 2, 4, 6
    site.save()
    expiry.apply_all(r, site, today)
    info = SiteInfo.from_model(site)
    filters = segments.parse("hostname==staging.example.com")
    values, _ = filtered.daily_values(r, info, filters, days[0], days[-1], windows=False)
    for day in days:
        expected, got = len(truth[day]), values[day]["dau"]
        assert got > 0 and abs(got - expected) <= max(2, 0.1 * expected), (day, got, expected)
    from analytics import queries

    rows = queries.run(r, queries.Query(info, days[0], days[-1], "breakdown", dimension="hostname")).rows
    found = {row["hostname"]: row["visitors"] for row in rows}
    union = sum(len(people) for people in truth.values())  # (each day's visitors are new people)
    assert abs(found["staging.example.com"] - union) <= max(3, 0.03 * union), (found, union)
