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
