"""The realtime view's numbers (queries.realtime_view): the visitors with an event in the last
30 minutes, counted from the open visits ingest keeps, against the events sent: how many,
the page each is on, their sources, countries and devices; and visitors by the minute."""

from datetime import UTC, datetime, timedelta

from analytics import queries
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.ingest.visit import visit_attrs
from analytics.sites import SiteInfo

CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"
)
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.1 Mobile/15E148 Safari/604.1"
)


def hit(when, visitor, path, referrer=None, agent=CHROME):
    return Hit(
        when,
        path,
        "pageview",
        identity_source(None, visitor, None, None),
        attrs=visit_attrs("example.com", f"https://example.com{path}", referrer, agent, "8.8.8.8", 1440),
    )


def test_the_last_30_minutes_visitors_as_the_events_say(site, r):
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    sent = [
        hit(now - timedelta(minutes=50), "gone", "/old", "https://www.google.com/"),  # (past the 30 minutes)
        hit(now - timedelta(minutes=20), "ann", "/", "https://www.google.com/"),
        hit(now - timedelta(minutes=19), "ann", "/pricing", "https://www.google.com/"),  # (ann is on /pricing)
        hit(now - timedelta(minutes=8), "bob", "/pricing", "https://news.ycombinator.com/", IPHONE),
        hit(now - timedelta(minutes=2), "cy", "/docs"),
        hit(now - timedelta(minutes=1), "cy", "/docs"),
    ]
    record(r, info, sent, now=now)
    view = queries.realtime_view(r, info, now)
    assert view["visitors"] == 3  # ann, bob, cy: "gone" had no event in the 30 minutes
    assert view["panels"]["page"] == [{"page": "/pricing", "visitors": 2}, {"page": "/docs", "visitors": 1}]
    assert {row["source"]: row["visitors"] for row in view["panels"]["source"]} == {
        "Google": 1,
        "Hacker News": 1,
        "Direct / None": 1,
    }
    assert {row["device"]: row["visitors"] for row in view["panels"]["device"]} == {"Desktop": 2, "Mobile": 1}
    assert len(view["minutes"]) == 30 and view["kept_minutes"] == 30  # (a new site keeps 30 minutes of minute HLLs)
    assert sum(m["visitors"] for m in view["minutes"]) == 5  # (ann's two minutes, bob's and cy's two)
    site.keep_realtime_minutes = 10
    site.save()
    short = queries.realtime_view(r, SiteInfo.from_model(site), now)
    assert [m["visitors"] for m in short["minutes"][:20]] == [None] * 20  # (not kept: unknown, not 0)
    assert sum(m["visitors"] for m in short["minutes"][20:]) == 3  # (bob's minute, 8 ago, and cy's two)
    assert view["now"] == queries.realtime_visitors(r, info, now) == 1


def test_no_one_is_an_empty_view(site, r):
    view = queries.realtime_view(r, SiteInfo.from_model(site), datetime.now(UTC))
    assert view["visitors"] == 0 and all(rows == [] for rows in view["panels"].values())


def test_filters_select_the_open_visits_by_their_fields_and_page(site, r):
    """Against the events: each filter's visitors are those whose visit passes it; a goal
    or custom property filter (not in a visit's state) leaves every number out."""
    from analytics.queries import segments

    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    sent = [
        hit(now - timedelta(minutes=20), "ann", "/", "https://www.google.com/"),
        hit(now - timedelta(minutes=19), "ann", "/pricing", "https://www.google.com/"),
        hit(now - timedelta(minutes=8), "bob", "/pricing", "https://news.ycombinator.com/", IPHONE),
        hit(now - timedelta(minutes=2), "cy", "/docs"),
        hit(now - timedelta(minutes=1), "dee", "/", "https://www.google.com/", IPHONE),
    ]
    record(r, info, sent, now=now)
    cases = {  # filter: (visitors in 30 minutes, in the last five)
        "source==Google": (2, 1),
        "source!=Google": (2, 1),
        "page==/pricing": (2, 0),
        "device==Mobile;source~goo": (1, 1),
        "page!~pri;source!=Direct / None": (1, 1),
    }
    for text, (visitors, recent) in cases.items():
        filters = segments.parse(text)
        view = queries.realtime_view(r, info, now, filters)
        assert (view["visitors"], view["now"]) == (visitors, recent), text
        assert queries.realtime_now(r, info, now, filters) == recent, text
        assert sum(row["visitors"] for row in view["panels"]["source"]) == visitors, text
        assert view["kept_minutes"] == 0 and not view["unfiltered"]  # (the minute HLLs are everyone's)
    refused = queries.realtime_view(r, info, now, segments.parse("goal==Signup;source==Google"))
    assert refused["visitors"] is None and refused["panels"] == {} and refused["unfiltered"] == ["goal==Signup"]
    assert queries.realtime_now(r, info, now, segments.parse("props:plan==pro")) is None
