"""The dashboard pages (server side): access, periods, numbers equal to the API, escaping."""

import gzip
import json
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from analytics import dimensions
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.ingest.visit import visit_attrs
from analytics.sites import SiteInfo
from dashboard import periods
from team.roles import add_member

pytestmark = pytest.mark.one_leg  # (pages, documents and settings over the runner, which every leg tests on its server)

XSS = "/<script>alert(1)</script>"


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-12345678")


@pytest.fixture
def data_site(make_site, r, owner):
    site, key = make_site()
    add_member(site, owner, "owner")
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    hits = [
        Hit(now - timedelta(days=n % 10), f"/p{n % 7}", "pageview", identity_source(None, f"v{n % 40}", None, None))
        for n in range(300)
    ]
    hits.append(Hit(None, XSS, "pageview", identity_source(None, "attacker", None, None)))
    record(r, info, hits)
    return site, key


def figures(response):
    html = response.content.decode()
    start = html.index('<script id="figures" type="application/json">') + len(
        '<script id="figures" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


def test_the_dashboard_shows_cards_and_charts_equal_to_the_api(client, data_site, owner):
    site, key = data_site
    client.force_login(owner)
    response = client.get("/dashboard/example.com/?period=7d")
    assert response.status_code == 200
    cards = {c["key"]: c for c in response.context["cards"]}
    api = client.get(
        "/api/v1/stats/timeseries",
        {
            "site": "example.com",
            "from": response.context["period"].start,
            "to": response.context["period"].end,
            "metrics": "pageviews,dau",
        },
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()["results"]
    assert cards["pageviews"]["value"] == sum(row["pageviews"] for row in api)
    figs = figures(response)
    assert set(figs) == {"visitors", "actives", "retention-day", "retention-week", "map"}
    bars = figs["visitors"]["data"][0]
    assert bars["y"] == [row["pageviews"] for row in api]
    pages_api = client.get(
        "/api/v1/stats/pages",
        {"site": "example.com", "from": api[0]["date"], "to": api[-1]["date"]},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()["results"]
    assert [p["page"] for p in response.context["pages"]] == [p["page"] for p in pages_api]


def test_every_public_string_is_escaped(client, data_site, owner):
    client.force_login(owner)
    html = client.get("/dashboard/example.com/?period=today").content.decode()
    assert XSS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the Pages panel's list
    suggestions = client.get("/dashboard/example.com/search?q=/%3C").json()
    assert suggestions == {"pages": [XSS]}  # JSON; the page inserts it with textContent


def test_content_security_policy_allows_only_our_scripts(client, data_site, owner):
    client.force_login(owner)
    csp = client.get("/dashboard/example.com/")["Content-Security-Policy"]
    assert "script-src 'self';" in csp and "unsafe-eval" not in csp and "frame-ancestors 'none'" in csp


def test_read_answers_are_never_kept_by_a_shared_cache(client, data_site, owner):
    """The dashboard, a share page and the read API say `private`: a CDN or a company proxy
    must not keep one site's numbers (static files keep their long public caching)."""
    from analytics.models import Site

    site = Site.objects.get(domain="example.com")
    token, key = site.enable_sharing(), site.create_api_key("cache")
    client.force_login(owner)
    answers = [
        client.get("/dashboard/example.com/"),
        client.get(f"/share/{token}/"),
        client.get("/api/v1/stats/aggregate", {"site": "example.com"}, HTTP_AUTHORIZATION=f"Bearer {key}"),
    ]
    for answer in answers:
        assert answer.status_code == 200 and answer["Cache-Control"].startswith("private"), answer


def test_login_is_required_and_other_sites_are_hidden(client, data_site, make_site, django_user_model):
    assert client.get("/dashboard/example.com/").status_code == 302
    stranger = django_user_model.objects.create_user("stranger", password="pw-12345678")
    add_member(make_site("theirs.example")[0], stranger, "owner")
    client.force_login(stranger)
    assert client.get("/dashboard/example.com/").status_code == 404
    assert client.get("/dashboard/example.com/search?q=/").status_code == 404
    home = client.get("/").content.decode()
    assert "theirs.example" in home and "example.com/" not in home.replace("theirs.example", "")


def test_share_links_open_one_site_read_only_until_revoked(client, data_site):
    site, _ = data_site
    token = site.enable_sharing()
    response = client.get(f"/share/{token}/?period=30d")
    assert response.status_code == 200 and response.context["shared"]
    assert "Tracking snippet" not in response.content.decode()
    assert client.get(f"/share/{token}/search?q=/p").json()["pages"][:2] == ["/p0", "/p1"]
    assert client.get(f"/share/{token}/realtime").json()["visitors"] >= 1
    site.revoke_sharing()
    assert client.get(f"/share/{token}/").status_code == 404
    assert client.get("/share/not-a-token/").status_code == 404


def test_a_share_link_shows_no_one_persons_data(client, data_site, owner):
    """Issue 10: a share link answered which pages a named user had seen."""
    site, _ = data_site
    token = site.enable_sharing()
    page = client.get(f"/share/{token}/").content.decode()
    assert 'id="recommendations"' not in page and "/recommend" not in page
    assert client.get(f"/share/{token}/recommend", {"user": "ann"}).status_code == 404
    assert client.get(f"/share/{token}/filters").status_code == 404
    assert client.get(f"/share/{token}/recommendations/").status_code == 404
    client.force_login(owner)  # the owner has the panel, on a page of its own
    assert 'id="recommendations"' not in client.get("/dashboard/example.com/").content.decode()
    assert 'id="recommendations"' in client.get("/dashboard/example.com/recommendations/").content.decode()
    assert client.get("/dashboard/example.com/filters").status_code == 200


def test_page_search_and_a_pages_chart(client, data_site, owner):
    client.force_login(owner)
    assert client.get("/dashboard/example.com/search?q=/p").json()["pages"] == [f"/p{n}" for n in range(7)]
    assert client.get("/dashboard/example.com/search?q=/nothing").json()["pages"] == []
    body = client.get("/dashboard/example.com/page?path=/p3&period=30d").json()
    assert body["path"] == "/p3"
    assert sum(body["figure"]["data"][0]["y"]) == sum(1 for n in range(300) if n % 7 == 3)


def test_the_live_stream_refuses_to_hold_a_wsgi_worker(client, data_site, owner):
    client.force_login(owner)
    response = client.get("/live/example.com")
    assert response.status_code == 404
    assert b"ASGI" in response.content


def test_empty_states_say_what_to_do(client, make_site, owner, admin_client):
    site, _ = make_site("quiet.example")
    add_member(site, owner, "owner")
    client.force_login(owner)
    html = client.get("/dashboard/quiet.example/").content.decode()
    assert "No data yet" in html and "data-domain=&quot;quiet.example&quot;" in html and "curl -X POST" in html
    assert (
        "No site yet" in admin_client.get("/").content.decode()
        or "quiet.example" in admin_client.get("/").content.decode()
    )


@pytest.mark.parametrize(
    "params, days, error",
    [
        ({"period": "today"}, 1, ""),
        ({"period": "7d"}, 7, ""),
        ({"period": "90d"}, 90, ""),
        ({"period": "custom", "from": "2026-01-01", "to": "2026-01-10"}, 10, ""),
        ({"period": "custom", "from": "2026-01-10", "to": "2026-01-01"}, 30, "runs forward"),
        ({"period": "custom", "from": "nope"}, 30, "two dates"),
        ({"period": "forever"}, 30, "Unknown period"),
    ],
)
def test_periods(params, days, error):
    period = periods.parse(params, datetime(2026, 3, 15).date())
    assert period.days == days
    assert error in period.error
    assert period.previous().end == period.start - timedelta(days=1)
    assert period.previous().days == period.days


def test_last_month_and_this_month():
    today = datetime(2026, 3, 15).date()
    assert (
        periods.parse({"period": "month"}, today).start.isoformat(),
        periods.parse({"period": "month"}, today).days,
    ) == ("2026-03-01", 15)
    last = periods.parse({"period": "last_month"}, today)
    assert (last.start.isoformat(), last.end.isoformat()) == ("2026-02-01", "2026-02-28")


def test_the_last_6_months_run_to_date_and_step_by_6_months():
    today = datetime(2026, 3, 15).date()
    six = periods.parse({"period": "6mo"}, today)
    assert (six.start.isoformat(), six.end, six.label) == ("2025-10-01", today, "Last 6 months")
    before = six.step(-1, today)
    assert (before.key, before.start.isoformat(), before.end.isoformat()) == ("custom", "2025-04-01", "2025-09-30")
    assert before.step(1, today) == six and six.step(1, today) is None


def test_the_recommendation_panel_reads_without_writing(client, data_site, owner, r):
    site, key = data_site
    client.post(
        "/api/v1/seen",
        data='{"user": "zoe", "items": ["/p0", "/p1"]}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    client.force_login(owner)
    shape_key = next(r.scan_iter(f"tally:{{{site.pk}}}:bloom:*:shape"))
    r.expire(shape_key, 1000)
    body = client.get("/dashboard/example.com/recommend?user=zoe").json()
    pages = [p["page"] for p in body["pages"]]
    assert "/p0" not in pages and "/p1" not in pages and "/p2" in pages
    assert client.get("/dashboard/example.com/recommend?user=").status_code == 400
    stats = client.get("/dashboard/example.com/filters").json()
    assert stats["filters"] == 1 and stats["memory_bytes"] > 0 and stats["target_error"] == 0.01
    assert r.ttl(shape_key) <= 1000  # looking did not count as the visitor's activity


def test_a_daily_salt_site_renders_without_retention(client, make_site, owner, r):
    site, key = make_site("private.example", identity_mode="daily")
    add_member(site, owner, "owner")
    record(r, SiteInfo.from_model(site), [Hit(None, "/", "pageview", identity_source(None, "a", None, None))])
    client.force_login(owner)
    response = client.get("/dashboard/private.example/")
    assert response.status_code == 200
    assert "cannot be followed across days" in response.content.decode()
    assert "new_visitors" not in {c["key"] for c in response.context["cards"]}
    export = client.get("/api/v1/reports/json", {"site": "private.example"}, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert set(json.loads(export.content)["tables"]) == {
        "summary",
        "daily",
        "pages",
        "goals",
        *dimensions.ALL,
    }  # no retention


def test_a_custom_range_outside_the_datas_life_is_a_400_not_a_500(client, data_site):
    site, _ = data_site
    token = site.enable_sharing()
    for dates in (("0001-01-01", "0001-01-05"), ("1990-01-01", "1990-01-02"), ("2026-01-01", "9999-12-31")):
        response = client.get(f"/share/{token}/", {"period": "custom", "from": dates[0], "to": dates[1]})
        assert response.status_code == 400, dates
        assert "must be between 2000-01-01 and" in response.content.decode()


def test_a_chart_label_shows_a_path_with_quotes_as_it_is():
    """Issue 10: Plotly does not know &quot;, so Django's escape() showed it literally."""
    from dashboard import charts

    figure = charts.page([{"date": "2026-11-01", "visitors": 2, "pageviews": 3}], '/say-"hi"-&-<b>')
    assert figure["data"][1]["name"] == 'Visitors of /say-"hi"-&amp;-&lt;b&gt;'


def test_today_is_drawn_by_the_hour(client, data_site, owner):
    client.force_login(owner)
    response = client.get("/dashboard/example.com/", {"period": "today"})
    bars = response.context["figures"]["visitors"]["data"][0]["x"]
    assert len(bars) == 24 and bars[0].endswith("T00:00") and bars[-1].endswith("T23:00")
    assert (
        len(client.get("/dashboard/example.com/", {"period": "7d"}).context["figures"]["visitors"]["data"][0]["x"]) == 7
    )


def test_tables_use_thousands_separators_and_unknown_pages_are_styled(client, data_site, owner, r):
    site, _ = data_site
    info = SiteInfo.from_model(site)
    record(
        r,
        info,
        [Hit(None, "/busy", "pageview", identity_source(None, f"b{n % 1300}", None, None)) for n in range(2500)],
    )
    client.force_login(owner)
    html = client.get("/dashboard/example.com/pages").content.decode()
    assert "2,500</td>" in html and re.search(
        r'<span class="count">1,[23]\d\d</span>', client.get("/dashboard/example.com/").content.decode()
    )
    missing = client.get("/dashboard/nowhere.example/")
    assert (
        missing.status_code == 404
        and "Back to your sites" in missing.content.decode()
        and "tally" in missing.content.decode().lower()
    )


def test_search_suggestions_come_most_visited_first(client, data_site, owner, r):
    site, _ = data_site
    info = SiteInfo.from_model(site)
    record(r, info, [Hit(None, "/pz", "pageview", identity_source(None, f"z{n}", None, None)) for n in range(500)])
    client.force_login(owner)
    assert client.get("/dashboard/example.com/search?q=/p").json()["pages"][0] == "/pz"


def test_an_empty_site_is_one_waiting_state_until_its_first_event(client, make_site, owner, r):
    """Issue 11: not empty axes from -1 to 4 and a grid of '0% 0'."""
    site, _ = make_site("quiet.example")
    add_member(site, owner, "owner")
    client.force_login(owner)
    html = client.get("/dashboard/quiet.example/").content.decode()
    assert "waiting for the first event" in html and 'http-equiv="refresh"' in html
    assert "chart-visitors" not in html and "plotly" not in html and "retention" not in html.lower()
    record(r, SiteInfo.from_model(site), [Hit(None, "/", "pageview", identity_source(None, "first", None, None))])
    html = client.get("/dashboard/quiet.example/").content.decode()
    assert "chart-visitors" in html and "waiting for the first event" not in html
    old = client.get(
        "/dashboard/quiet.example/", {"period": "custom", "from": "2020-01-01", "to": "2020-01-31"}
    ).content.decode()
    assert "No visits in this period." in old


def test_all_pages_paged_and_searchable(client, data_site, owner, r):
    site, _ = data_site
    info = SiteInfo.from_model(site)
    record(
        r,
        info,
        [
            Hit(None, f"/doc/{n}", "pageview", identity_source(None, f"d{n}-{k}", None, None))
            for n in range(120)
            for k in range(1 + n % 3)
        ],
    )
    client.force_login(owner)
    assert (
        'href="/dashboard/example.com/pages?period=30d" data-details'
        in client.get("/dashboard/example.com/").content.decode()
    )
    first = client.get("/dashboard/example.com/pages", {"period": "30d"})
    assert first.status_code == 200 and len(first.context["rows"]) == 50 and first.context["last"] == 3
    third = client.get("/dashboard/example.com/pages", {"period": "30d", "page": "3"}).context
    assert third["number"] == 3 and len(third["rows"]) == third["total"] - 100
    everything = [
        p["name"]
        for n in (1, 2, 3)
        for p in client.get("/dashboard/example.com/pages", {"period": "30d", "page": str(n)}).context["rows"]
    ]
    assert len(everything) == len(set(everything)) == first.context["total"]  # every page once, in rank order
    found = client.get("/dashboard/example.com/pages", {"period": "30d", "q": "/doc/11"}).context["rows"]
    assert {p["name"] for p in found} == {
        "/doc/11",
        "/doc/110",
        "/doc/111",
        "/doc/112",
        "/doc/113",
        "/doc/114",
        "/doc/115",
        "/doc/116",
        "/doc/117",
        "/doc/118",
        "/doc/119",
    }
    shared = client.get(f"/share/{site.enable_sharing()}/pages", {"q": XSS})
    assert shared.status_code == 200 and "<img" not in shared.content.decode().split("<main>")[1]


# Issue 12, item 12: the visit cards and the breakdown panels.
TAG = "<img src=x onerror=alert(1)>"
CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"
)
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"


def visits(r, site, landings):
    """One single-page visit for each (url, referrer, user agent, ip), a minute apart."""
    info = SiteInfo.from_model(site)
    start = datetime.now(UTC) - timedelta(minutes=len(landings) + 1)
    hits = [
        Hit(
            start + timedelta(minutes=n),
            "/" + url.split("/", 3)[3].split("?")[0],
            "pageview",
            identity_source(None, f"visitor-{n}", None, None),
            attrs=visit_attrs("example.com", url, referrer, agent, ip, 1440),
        )
        for n, (url, referrer, agent, ip) in enumerate(landings)
    ]
    record(r, info, hits)


@pytest.fixture
def sources_site(make_site, r, owner):
    """Three visits from Google (Chrome, US), one from a newsletter whose campaign is markup
    (Firefox, Australia), one from Hacker News landing on a path that is markup."""
    site, key = make_site()
    add_member(site, owner, "owner")
    visits(
        r,
        site,
        [("https://example.com/", "https://www.google.com/", CHROME, "8.8.8.8")] * 3
        + [
            (
                f"https://example.com/launch?utm_source=newsletter&utm_medium=email&utm_campaign={quote(TAG)}",
                None,
                FIREFOX,
                "1.1.1.1",
            ),
            (f"https://example.com{XSS}", "https://news.ycombinator.com/item?id=1", FIREFOX, "8.8.8.8"),
        ],
    )
    return site


def test_the_cards_show_visits_bounce_rate_and_duration(client, sources_site, owner):
    client.force_login(owner)
    response = client.get("/dashboard/example.com/?period=7d")
    cards = {c["key"]: c for c in response.context["cards"]}
    assert list(cards) == [
        "visitors",
        "visits",
        "pageviews",
        "views_per_visit",
        "bounce_rate",
        "visit_duration",
        "dau",
        "wau",
        "mau",
        "stickiness",
        "new_visitors",
    ]
    assert (
        cards["visits"]["value"],
        cards["bounce_rate"]["value"],
        cards["visit_duration"]["value"],
        cards["views_per_visit"]["value"],
    ) == (5, 100, 0, 1.0)
    html = response.content.decode()
    for key, shown in (("visits", "5"), ("views_per_visit", "1.00"), ("bounce_rate", "100%"), ("visit_duration", "0s")):
        assert re.search(
            rf'data-metric="{key}"[^>]*>\s*<div class="label">[^<]+</div>\s*<div class="value">{re.escape(shown)}</div>',
            html,
        ), key


def test_a_falling_bounce_rate_is_good_news():
    from dashboard.views import _card

    assert _card("bounce_rate", "Bounce rate", {"value": 40, "change": -12.5}, True)["good"] is True
    assert _card("bounce_rate", "Bounce rate", {"value": 60, "change": 9.0}, True)["good"] is False
    assert _card("visitors", "Visitors", {"value": 60, "change": 9.0}, True)["good"] is True
    assert _card("visitors", "Visitors", {"value": 60, "change": 0.0}, True)["good"] is None


def test_durations_and_rates_read_like_plausible():
    from dashboard.templatetags.humanize_tally import duration, metric

    assert [duration(s) for s in (0, 45, 83, 3599, 3720, None)] == ["0s", "45s", "1m 23s", "59m 59s", "1h 2m", "–"]
    assert (
        metric(37, "bounce_rate"),
        metric(2.456, "views_per_visit"),
        metric(83, "visit_duration"),
        metric(None, "visits"),
    ) == ("37%", "2.46", "1m 23s", "–")


def test_the_panels_first_tabs_come_with_the_page_escaped(client, sources_site, owner):
    client.force_login(owner)
    html = client.get("/dashboard/example.com/?period=7d").content.decode()
    for panel in ("sources", "pages", "locations", "devices"):
        assert f'id="panel-{panel}"' in html
    loaded = re.findall(
        r'<div class="list" data-property="([a-z_]+)" data-loaded>(.*?)</div>\s*<p class="more"', html, re.S
    )
    assert [prop for prop, _ in loaded] == ["channel", "page", "country", "browser"]
    names = {
        prop: re.findall(r'<(?:span|a) class="name[^"]*"[^>]*>([^<]*)</(?:span|a)>', rows) for prop, rows in loaded
    }
    assert names["channel"] == [
        "Organic Search",
        "Email",
        "Organic Social",
    ]  # (Hacker News is social, by Matomo's lists)
    assert names["country"] == ["United States", "Australia"]
    assert names["browser"] == ["Chrome", "Firefox"]
    assert "/&lt;script&gt;alert(1)&lt;/script&gt;" in names["page"]
    assert TAG not in html and XSS not in html
    assert (
        len(re.findall(r'<p class="more"><a href="[^"]+" data-details>', html)) == 4
    )  # shown: the lists that came with rows
    assert 'data-topojson-url="/static/vendor/topojson/"' in html


def test_the_breakdown_endpoint_lists_a_tab(client, sources_site, owner):
    client.force_login(owner)
    body = client.get("/dashboard/example.com/breakdown", {"property": "utm_campaign", "period": "7d"}).json()
    row = body["rows"][0]
    assert len(body["rows"]) == 1 and {k: row[k] for k in ("name", "value", "count", "bar")} == {
        "name": TAG,
        "value": TAG,
        "count": 1,
        "bar": 100.0,
    }  # as text: the page sets it with textContent
    assert parse_qs(urlsplit(row["href"]).query)["filters"] == [
        f"utm_campaign=={TAG}"
    ]  # (the row's link filters by it, URL-encoded)
    assert (body["column"], body["metric"], body["total"]) == ("Campaign", "visitors", 1)
    assert body["details"] == "/dashboard/example.com/details/utm_campaign?period=7d"
    sources = client.get("/dashboard/example.com/breakdown", {"property": "source", "period": "7d"}).json()["rows"]
    assert [(row["name"], row["count"], row["bar"]) for row in sources] == [
        ("Google", 3, 100.0),
        ("Hacker News", 1, 33.3),
        ("newsletter", 1, 33.3),
    ]
    exits = client.get("/dashboard/example.com/breakdown", {"property": "exit_page"}).json()
    assert (
        exits["metric"] == "visits"
        and exits["path"]
        and {row["name"] for row in exits["rows"]} == {"/", "/launch", XSS}
    )
    assert (
        client.get("/dashboard/example.com/breakdown", {"property": "region"}).json()["rows"] == []
    )  # no city database here
    bad = client.get("/dashboard/example.com/breakdown", {"property": "password"})
    assert bad.status_code == 400 and "property must be one of" in bad.json()["error"]


def test_regions_and_cities_without_a_city_database_say_what_they_need(client, sources_site, owner, settings):
    """An empty Regions or Cities tab read "No data for this period", as if no visitor had a
    city: without a city database it says why, on the tab and on its Details page."""
    settings.GEO_CITY_DB = ""
    client.force_login(owner)
    for prop in ("region", "city"):
        body = client.get("/dashboard/example.com/breakdown", {"property": prop, "period": "7d"}).json()
        assert body["rows"] == [] and body["empty"].startswith(
            "Regions and cities need a city database: set TALLY_GEO_CITY_DB to"
        )
        html = client.get(f"/dashboard/example.com/details/{prop}", {"period": "7d"}).content.decode()
        assert "Regions and cities need a city database: set TALLY_GEO_CITY_DB" in html
    assert (
        client.get("/dashboard/example.com/breakdown", {"property": "utm_term", "period": "7d"}).json()["empty"] == ""
    )  # (no data: no reason)
    settings.GEO_CITY_DB = "/var/lib/geo/city.mmdb"  # configured: an empty list is just empty
    assert client.get("/dashboard/example.com/breakdown", {"property": "city", "period": "7d"}).json()["empty"] == ""


def test_through_a_share_link_regions_and_cities_say_no_data_without_the_operators_remedy(
    client, sources_site, owner, admin_user, settings
):
    """A share link's public viewer read "set TALLY_GEO_CITY_DB to a ... .mmdb file", an
    instruction for whoever runs the server: they read a plain sentence; signed-in owners
    and staff keep the instruction."""
    settings.GEO_CITY_DB = ""
    token = sources_site.enable_sharing()
    for prop, sentence in (("region", "No region data for this site."), ("city", "No city data for this site.")):
        tab = client.get(f"/share/{token}/breakdown", {"property": prop, "period": "7d"})
        assert tab.status_code == 200 and tab.json()["rows"] == [] and tab.json()["empty"] == sentence
        html = client.get(f"/share/{token}/details/{prop}", {"period": "7d"}).content.decode()
        assert sentence in html and "TALLY_GEO_CITY_DB" not in html and ".mmdb" not in html
    for user in (owner, admin_user):
        client.force_login(user)
        body = client.get("/dashboard/example.com/breakdown", {"property": "city", "period": "7d"}).json()
        assert body["rows"] == [] and "TALLY_GEO_CITY_DB" in body["empty"], user
        assert (
            "TALLY_GEO_CITY_DB"
            in client.get("/dashboard/example.com/details/region", {"period": "7d"}).content.decode()
        )


def test_details_pages_through_every_value_and_searches(client, make_site, r, owner):
    site, _ = make_site()
    add_member(site, owner, "owner")
    visits(
        r,
        site,
        [
            (f"https://example.com/doc/{n}?utm_campaign={quote(TAG) if n == 7 else f'c{n}'}", None, CHROME, "8.8.8.8")
            for n in range(120)
        ],
    )
    client.force_login(owner)
    first = client.get("/dashboard/example.com/details/entry_page", {"period": "7d"})
    assert (
        first.status_code == 200
        and len(first.context["rows"]) == 50
        and first.context["last"] == 3
        and first.context["total"] == 120
    )
    assert [c["label"] for c in first.context["columns"]] == [
        "Visitors",
        "Visits",
        "Pageviews",
        "Bounce rate",
        "Visit duration",
    ]
    assert first.context["rows"][0]["cells"][3]["text"] == "100%"
    row = first.context["rows"][0]  # (a row is a link to the dashboard filtered by it)
    assert row["href"] == "/dashboard/example.com/?period=7d&filters=entry_page%3D%3D" + quote(row["name"], safe="")
    everything = [
        row["name"]
        for n in (1, 2, 3)
        for row in client.get("/dashboard/example.com/details/entry_page", {"period": "7d", "page": n}).context["rows"]
    ]
    assert sorted(everything) == sorted(f"/doc/{n}" for n in range(120))  # every value once
    assert client.get("/dashboard/example.com/details/entry_page", {"period": "7d", "page": 99}).context["number"] == 3
    found = client.get("/dashboard/example.com/details/entry_page", {"period": "7d", "q": "/doc/11"}).context["rows"]
    assert {row["name"] for row in found} == {"/doc/11", *(f"/doc/{n}" for n in range(110, 120))}
    html = client.get("/dashboard/example.com/details/utm_campaign", {"period": "7d", "q": "<img"}).content.decode()
    assert '">&lt;img src=x onerror=alert(1)&gt;</a></td>' in html and TAG not in html  # (escaped, in its link too)
    exits = client.get("/dashboard/example.com/details/exit_page", {"period": "7d"}).context
    assert [c["label"] for c in exits["columns"]] == ["Visits"]
    assert client.get("/dashboard/example.com/details/nothing").status_code == 404
    assert client.get("/dashboard/example.com/details/page").status_code == 404  # top pages live at /pages


def test_panels_through_a_share_link_and_not_for_strangers(client, sources_site, django_user_model):
    token = sources_site.enable_sharing()
    assert client.get(f"/share/{token}/breakdown", {"property": "country"}).json()["rows"][0]["name"] == "United States"
    body = client.get(f"/share/{token}/breakdown", {"property": "channel"}).json()
    assert body["details"].startswith(f"/share/{token}/details/channel?")
    assert "Organic Search" in client.get(body["details"]).content.decode()
    assert f'href="/share/{token}/details/channel?period=30d"' in client.get(f"/share/{token}/").content.decode()
    sources_site.revoke_sharing()
    assert client.get(f"/share/{token}/breakdown", {"property": "country"}).status_code == 404
    assert client.get(f"/share/{token}/details/source").status_code == 404

    stranger = django_user_model.objects.create_user("stranger", password="pw-12345678")
    client.force_login(stranger)
    assert client.get("/dashboard/example.com/breakdown", {"property": "country"}).status_code == 404
    assert client.get("/dashboard/example.com/details/source").status_code == 404


def test_the_maps_outlines_are_served_under_their_plain_name(client):
    """plotly.js asks for <topojsonURL>world_110m.json: the collected static files (hashed
    names, as make run serves them) keep that plain name beside the hashed copy."""
    from django.conf import settings
    from django.templatetags.static import static

    from dashboard.views import topojson_folder

    assert "CompressedManifestStaticFilesStorage" in settings.STORAGES["staticfiles"]["BACKEND"]
    assert re.fullmatch(
        r"/static/vendor/topojson/world_110m\.[0-9a-f]{12}\.json", static("vendor/topojson/world_110m.json")
    )
    response = client.get(topojson_folder() + "world_110m.json", HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200 and response["Content-Encoding"] == "gzip"
    topology = json.loads(gzip.decompress(b"".join(response.streaming_content)))
    assert {"countries", "land"} <= set(topology["objects"])
    ids = {shape.get("id") for shape in topology["objects"]["countries"]["geometries"]}
    assert {"USA", "DEU", "AUS", "BRA"} <= ids


def test_yesterday_is_drawn_by_the_hour_with_every_hour_filled(client, data_site, owner):
    """Issue 11, item 5: Today and Yesterday by the hour (Yesterday is a period of its own)."""
    client.force_login(owner)
    response = client.get("/dashboard/example.com/", {"period": "yesterday"})
    assert response.status_code == 200 and response.context["period"].days == 1
    lines = response.context["figures"]["visitors"]["data"]
    assert len(lines[0]["x"]) == 24 and None not in lines[1]["y"]  # a whole day: no hour still to come
    assert 'href="?period=yesterday" class="active"' in response.content.decode()


def test_a_filtered_view_shows_its_chips_escaped_and_keeps_them_in_every_link(client, sources_site, owner):
    client.force_login(owner)
    html = client.get(
        "/dashboard/example.com/", {"period": "7d", "filters": f"utm_campaign=={TAG};country!=AU"}
    ).content.decode()
    assert TAG not in html  # (the chip's label is escaped like every public string)
    assert "UTM campaign is &lt;img" in html and "Country is not Australia" in html
    chips = re.findall(r'<a class="remove" href="([^"]+)"', html)
    assert len(chips) == 2 and all("period=7d" in href for href in chips)
    assert 'href="?period=30d&amp;filters=' in html  # the period links keep the filters
    # a single filter: its own visits; the panel rows link to narrower views
    html = client.get("/dashboard/example.com/", {"period": "7d", "filters": "source==Google"}).content.decode()
    assert re.search(r'data-metric="visits"[^>]*>\s*<div class="label">Visits</div>\s*<div class="value">3<', html)
    assert re.search(r'data-metric="visitors"[^>]*>\s*<div class="label">Visitors</div>\s*<div class="value">3<', html)
    assert "filters=source%3D%3DGoogle%3Bchannel%3D%3DOrganic+Search" in html


def test_bad_filters_are_ignored_with_a_notice_and_compare_can_be_last_year(client, sources_site, owner):
    client.force_login(owner)
    html = client.get("/dashboard/example.com/", {"period": "7d", "filters": "colour==red"}).content.decode()
    assert "Filters ignored: &#x27;colour&#x27;: unknown property" in html
    today = datetime.now(UTC).date()
    html = client.get("/dashboard/example.com/", {"period": "7d", "compare": "year"}).content.decode()
    assert 'class="active" aria-current="true">Same dates last year' in html
    assert f"{(today - timedelta(days=6)).replace(year=today.year - 1):%-d %b %Y}" in html


def test_the_visitors_chart_draws_the_compared_period_beside_this_one(client, data_site, owner):
    client.force_login(owner)
    for params, label, offset in (
        ({"period": "7d"}, "Visitors, previous period", 7),
        ({"period": "7d", "compare": "year"}, "Visitors, last year", None),
    ):
        traces = client.get("/dashboard/example.com/", params).context["figures"]["visitors"]["data"]
        compared = next(t for t in traces if t["name"] == label)
        assert len(compared["x"]) == 7 and compared["x"] == traces[1]["x"]
        first = datetime.fromisoformat(traces[1]["x"][0]).date()
        expected = first - timedelta(days=offset) if offset else first.replace(year=first.year - 1)
        assert compared["customdata"][0] == expected.isoformat()
    # the days before hold the site's visits of 7-9 days ago: the previous week is not empty
    traces = client.get("/dashboard/example.com/", {"period": "7d"}).context["figures"]["visitors"]["data"]
    assert sum(traces[2]["y"]) > 0


def test_the_hourly_chart_draws_the_compared_period_by_the_hour(client, data_site, owner):
    """Today and Yesterday (by the hour) had no compare line; the daily chart had one. Its
    points are the read API's hourly comparison."""
    site, key = data_site
    client.force_login(owner)
    today = SiteInfo.from_model(site).today()
    lines = {}
    for params, label, compared in (
        ({"period": "today"}, "Visitors, previous period", today - timedelta(days=1)),
        ({"period": "yesterday", "compare": "year"}, "Visitors, last year", None),
    ):
        response = client.get("/dashboard/example.com/", params)
        period = response.context["period"]
        traces = response.context["figures"]["visitors"]["data"]
        line = lines[label] = next(t for t in traces if t["name"] == label)
        assert len(line["x"]) == 24 and line["x"] == traces[1]["x"]  # over this day's hours
        compared = compared or period.start.replace(year=period.start.year - 1)
        assert (line["customdata"][0], line["customdata"][-1]) == (f"{compared} 00:00", f"{compared} 23:00")
        api = client.get(
            "/api/v1/stats/timeseries",
            {
                "site": "example.com",
                "from": period.start,
                "to": period.end,
                "interval": "hour",
                "compare": params.get("compare", "previous_period"),
            },
            HTTP_AUTHORIZATION=f"Bearer {key}",
        ).json()
        assert line["y"] == [row["visitors"] for row in api["comparison"]["results"]]
    assert (
        sum(lines["Visitors, previous period"]["y"]) > 0 and sum(lines["Visitors, last year"]["y"]) == 0
    )  # yesterday had visits


def test_the_actives_chart_names_its_axis_and_its_windows(client, data_site, owner):
    client.force_login(owner)
    figure = client.get("/dashboard/example.com/", {"period": "7d"}).context["figures"]["actives"]
    assert figure["layout"]["yaxis"]["title"]["text"] == "Active visitors"
    assert [trace["name"] for trace in figure["data"]] == ["DAU · that day", "WAU · 7 days", "MAU · 30 days"]
    assert all(trace["hovertemplate"] == "%{y:,} visitors" for trace in figure["data"])


def test_the_retention_heatmap_starts_at_the_first_new_visitors(client, data_site, owner):
    """The site's visitors came in the last 10 days: the 20 days before were 20 rows of 0%."""
    client.force_login(owner)
    today = SiteInfo.from_model(data_site[0]).today()
    heatmap = client.get("/dashboard/example.com/", {"period": "30d"}).context["figures"]["retention-day"]["data"][0]
    assert len(heatmap["y"]) == 10 and heatmap["y"][0].startswith(f"{today - timedelta(days=9)} (")
    assert not any(label.endswith("(0)") for label in heatmap["y"])


def test_retention_labels_cohorts_of_no_one_and_leaves_out_those_before_the_first():
    """A day without new visitors was a row of 0% (its d0 too, beside everyone else's 100%)."""
    from dashboard import charts

    cohorts = [
        {"cohort": "2026-11-01", "size": 0, "retained": [0, 0, 0, 0]},  # before the site's first visitor
        {"cohort": "2026-11-02", "size": 4, "retained": [4, 2, 1]},
        {"cohort": "2026-11-03", "size": 0, "retained": [0, 0]},
        {"cohort": "2026-11-04", "size": 2, "retained": [2]},
    ]
    heatmap = charts.retention(cohorts, "day")["data"][0]
    assert heatmap["y"] == ["2026-11-02 (4)", "2026-11-03 · no new visitors", "2026-11-04 (2)"]
    assert heatmap["z"][1] == [None, None, None] and heatmap["text"][1] == heatmap["customdata"][1] == ["", "", ""]
    assert heatmap["z"][0] == [100, 50, 25] and heatmap["text"][2][0] == "100%<br>2" and heatmap["hoverongaps"] is False
    nobody = charts.retention([{"cohort": "2026-11-01", "size": 0, "retained": [0, 0]}], "day")["data"][0]
    assert nobody["y"] == ["2026-11-01 · no new visitors"]  # (no one at all: the rows say so, not an empty chart)


def test_a_share_link_computes_only_so_many_pages_a_minute_across_clients(client, data_site, settings):
    """Clients at rotating addresses, each URL new (a cache miss each), made another site's
    read API p50 1.2 s: past the link's renders a minute, 429; cached answers still come."""
    from analytics.models import Site

    settings.SHARE_RENDERS_PER_MINUTE, settings.SHARE_RENDERS_BURST = 1, 3  # (none comes back within the test)
    token = Site.objects.get(domain="example.com").enable_sharing()
    codes = [
        client.get(f"/share/{token}/?period=7d&x={n}", REMOTE_ADDR=f"203.0.113.{n + 1}").status_code for n in range(5)
    ]
    assert codes == [200, 200, 200, 429, 429]
    refused = client.get(f"/share/{token}/?period=7d&x=9", REMOTE_ADDR="198.51.100.7")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert (
        client.get(f"/share/{token}/?period=7d&x=0", REMOTE_ADDR="198.51.100.7").status_code == 200
    )  # (from the cache)


def test_a_hammered_share_link_is_answered_from_a_minutes_cache_and_limited_per_client(client, data_site, settings):
    """Four parallel loads of one share page for a minute slowed another site's reads to
    36.7 s: the page is computed once a minute per URL, and one client gets 429 past its
    share-page rate, with Retry-After."""
    from analytics.models import Site

    settings.SHARE_PAGES_PER_MINUTE, settings.SHARE_PAGES_BURST = 1, 4  # (a second's refill let a slow run through)
    token = Site.objects.get(domain="example.com").enable_sharing()
    first = client.get(f"/share/{token}/?period=7d")
    assert first.status_code == 200 and not first.cookies
    again = client.get(f"/share/{token}/?period=7d")
    assert again.content == first.content  # (served from the cache)
    codes = [client.get(f"/share/{token}/?period=30d").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    other = client.get(f"/share/{token}/?period=30d", REMOTE_ADDR="203.0.113.8")
    assert other.status_code == 200  # (another client has its own bucket)


def test_the_filter_menu_adds_replaces_and_refuses_filters(client, sources_site, owner):
    client.force_login(owner)
    base = "/dashboard/example.com/?period=7d&filters=country%21%3DAU"
    added = client.get(base + "&fprop=source&fop=%21~&fvalue=goo+%7C+hacker")
    assert added.status_code == 302
    assert parse_qs(urlsplit(added["Location"]).query)["filters"] == ["country!=AU;source!~goo|hacker"]
    named = client.get(base + "&fprop=country&fop=%3D%3D&fvalue=United+States")  # (a country by its name)
    assert parse_qs(urlsplit(named["Location"]).query)["filters"] == ["country!=AU;country==US"]
    replaced = client.get(base + "&fprop=source&fop=%3D%3D&fvalue=Google&freplace=0")
    assert parse_qs(urlsplit(replaced["Location"]).query)["filters"] == ["source==Google"]
    refused = client.get(base + "&fprop=goal&fop=~&fvalue=Sign")
    html = refused.content.decode()
    assert refused.status_code == 200 and "Goals are matched by name" in html and "<details" in html
    edit = client.get(base + "&edit=0").content.decode()
    assert 'id="filter-menu" open' in edit and 'name="freplace" value="0"' in edit
    assert re.search(r'<option value="!=" selected>is not</option>', edit) and 'value="AU"' in edit
    markup = client.get(base + "&fprop=page&fop=%3D%3D&fvalue=" + quote(TAG) + "&freplace=9")
    assert TAG not in client.get(markup["Location"]).content.decode()  # (its chip escaped)


def test_filtered_to_one_source_the_sources_tab_lists_its_referrers(client, sources_site, owner):
    client.force_login(owner)
    answer = client.get("/dashboard/example.com/breakdown?property=source&period=7d&filters=source%3D%3DGoogle").json()
    assert answer["listed"] == "referrer" and answer["column"] == "Referrer"
    assert [row["name"] for row in answer["rows"]] == ["google.com"]
    assert "filters=source%3D%3DGoogle%3Breferrer%3D%3Dgoogle.com" in answer["rows"][0]["href"]
    assert answer["details"].startswith("/dashboard/example.com/details/source?")
    details = client.get(answer["details"]).content.decode()
    assert "google.com" in details and "Referrer" in details
    plain = client.get("/dashboard/example.com/breakdown?property=source&period=7d").json()
    assert plain["listed"] == "source" and "Google" in [row["name"] for row in plain["rows"]]


def test_segments_are_saved_private_or_shared_and_a_segment_link_shows_only_its_audience(
    client, sources_site, owner, django_user_model
):
    from analytics.models import Segment

    client.force_login(owner)
    page = "/dashboard/example.com/?period=7d&filters=source%3D%3DGoogle"
    client.post(
        "/dashboard/example.com/segments", {"name": "Google", "filters": "source==Google", "back": "?period=7d"}
    )
    client.post("/dashboard/example.com/segments", {"name": "Mine", "filters": "country==US", "shared": ""})
    shared = Segment.objects.get(name="Google")
    shared.shared = True
    shared.save()
    refused = client.post("/dashboard/example.com/segments", {"name": "", "filters": "source==Google"})
    assert "segment_error=1" in refused["Location"] and Segment.objects.count() == 2
    html = client.get(page).content.decode()
    assert ">Google</a>" in html and ">Mine</a>" in html

    other = django_user_model.objects.create_user("member", password="pw-12345678")
    add_member(sources_site, other, "editor")
    client.force_login(other)
    html = client.get(page).content.decode()
    assert ">Google</a>" in html and ">Mine</a>" not in html  # (the shared one only)
    assert client.post(f"/dashboard/example.com/segments/{shared.pk}/delete").status_code == 404  # (not theirs)

    client.force_login(owner)
    client.post(f"/dashboard/example.com/segments/{shared.pk}/share", {"back": "?period=7d"})
    shared.refresh_from_db()
    assert shared.share_token
    client.logout()
    link = f"/share/{shared.share_token}/?period=7d"
    html = client.get(link).content.decode()
    assert "Source is Google" in html  # (its filters, forced)
    assert re.search(r'data-metric="visitors"[^>]*>\s*<div class="label">Visitors</div>\s*<div class="value">3<', html)
    widened = client.get(f"/share/{shared.share_token}/?period=7d&filters=").content.decode()
    assert "Source is Google" in widened  # (a URL without them still shows that audience only)
    narrower = client.get(f"/share/{shared.share_token}/?period=7d&filters=country%3D%3DUS").content.decode()
    assert "Source is Google" in narrower and "Country is United States" in narrower
    client.force_login(owner)
    client.post(f"/dashboard/example.com/segments/{shared.pk}/delete")
    client.logout()
    assert client.get(link).status_code == 404


def test_notes_on_the_timeline_show_to_the_sites_people_and_public_ones_on_its_share_link(
    client, sources_site, owner, django_user_model
):
    from analytics.models import Annotation

    client.force_login(owner)
    today = SiteInfo.from_model(sources_site).today()
    client.post("/dashboard/example.com/annotations", {"date": today.isoformat(), "text": TAG, "back": "?period=7d"})
    client.post(
        "/dashboard/example.com/annotations",
        {"date": (today - timedelta(days=3)).isoformat(), "end": today.isoformat(), "text": "Sale", "public": "on"},
    )
    bad = client.post("/dashboard/example.com/annotations", {"date": "nope", "text": "x"})
    assert "annotation_error=1" in bad["Location"] and Annotation.objects.count() == 2
    html = client.get("/dashboard/example.com/?period=7d").content.decode()
    assert TAG not in html and "Sale" in html  # (the note's text escaped)
    chart = figures(client.get("/dashboard/example.com/?period=7d"))["visitors"]["layout"]
    assert len(chart["shapes"]) == 2 and [s["type"] for s in chart["shapes"]] == ["rect", "line"]
    member = django_user_model.objects.create_user("member", password="pw-12345678")
    add_member(sources_site, member, "editor")
    client.force_login(member)
    assert "Sale" in client.get("/dashboard/example.com/?period=7d").content.decode()  # (every member sees them)
    note = Annotation.objects.get(text="Sale")
    assert client.post(f"/dashboard/example.com/annotations/{note.pk}/delete").status_code == 404  # (not theirs)
    client.logout()
    token = sources_site.enable_sharing()
    shared = client.get(f"/share/{token}/?period=7d").content.decode()
    assert "Sale" in shared and "&lt;img" not in shared  # (the public one only)


def test_the_goals_card_lists_custom_properties_with_their_conversion(client, make_site, r, owner):
    site, _ = make_site()
    add_member(site, owner, "owner")
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    hits = [Hit(now, "/", "pageview", identity_source(None, f"v{n}", None, None)) for n in range(10)]
    hits += [
        Hit(now, "/signup", "Signup", identity_source(None, f"v{n}", None, None), props=(("plan", plan),))
        for n, plan in enumerate(["team", "team", "free", XSS])
    ]
    record(r, info, hits)
    client.force_login(owner)
    html = client.get("/dashboard/example.com/?period=today").content.decode()
    pane = html[html.index('data-pane="properties"') : html.index('data-pane="goals"')]
    assert re.search(
        r'<td><a href="[^"]*filters=props%3Aplan%3D%3Dteam[^"]*"[^>]*>team</a></td><td class="num">2</td>'
        r'<td class="num">2</td><td class="num">20%</td>',
        pane,
    )
    assert XSS not in html and "&lt;script&gt;" in pane
    filtered = client.get("/dashboard/example.com/?period=today&filters=page%3D%3D%2F").content.decode()
    assert "clear the filters to see them" in filtered


def test_a_custom_property_is_a_filter_in_the_menu_with_its_values_suggested(client, make_site, r, owner):
    site, _ = make_site()
    add_member(site, owner, "owner")
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    hits = [Hit(now, "/", "pageview", identity_source(None, f"v{n}", None, None)) for n in range(10)]
    hits += [
        Hit(now, "/signup", "Signup", identity_source(None, f"v{n}", None, None), props=(("plan", plan),))
        for n, plan in enumerate(["team", "team", "free", XSS])
    ]
    record(r, info, hits)
    client.force_login(owner)
    base = "/dashboard/example.com/?period=today"
    html = client.get(base).content.decode()
    assert '<option value="props:plan">Property: plan</option>' in html
    added = client.get(base + "&fprop=props%3Aplan&fop=%3D%3D&fvalue=team")
    assert parse_qs(urlsplit(added["Location"]).query)["filters"] == ["props:plan==team"]
    page = client.get(added["Location"])
    cards = {c["key"]: c for c in page.context["cards"]}
    assert cards["visitors"]["value"] == 2 and not cards["visitors"].get("estimate")
    assert "Property plan is team" in page.content.decode()
    edit = client.get(added["Location"] + "&edit=0").content.decode()
    assert '<option value="props:plan" selected>Property: plan</option>' in edit
    suggested = client.get("/dashboard/example.com/breakdown?property=props%3Aplan&period=today").json()
    assert {row["value"] for row in suggested["rows"]} == {"team", "free", XSS}


def test_realtime_under_a_segments_link_counts_its_audience_alone(client, sources_site, owner):
    """The visits of the last minutes: five, three of them from Google. A Google segment's
    link shows three everywhere realtime is (the view, its refresh, the live counter's
    poll), and a goal filter, which open visits cannot answer, shows no number at all."""
    from analytics.models import Segment

    token = Segment.objects.create(site=sources_site, name="Google", filters="source==Google").share()
    page = client.get(f"/share/{token}/?period=realtime")
    assert page.status_code == 200 and page.context["numbers"]["visitors"] == 3
    html = page.content.decode()
    assert "Source is Google" in html and "chart-minutes" not in html  # (the minutes are everyone's)
    assert '<span class="chip locked"' in html and 'class="remove"' not in html  # (the link's own: no ×)
    view = client.get(f"/share/{token}/realtime?view=1&filters=source%21%3DGoogle").json()  # (cannot undo it)
    assert view["visitors"] == 0 and view["panels"]["source"] == []
    mine = client.get(f"/share/{token}/realtime?view=1").json()
    assert mine["visitors"] == 3 and mine["now"] < 3  # (the five minutes: the visits' last events in them)
    assert client.get(f"/share/{token}/realtime").json()["visitors"] == mine["now"]
    client.force_login(owner)
    assert client.get("/dashboard/example.com/realtime?view=1").json()["visitors"] == 5
    row = client.get("/dashboard/example.com/realtime?view=1").json()["panels"]["source"][0]
    assert row["href"].startswith("?period=realtime&filters=source%3D%3D")
    goal = client.get("/dashboard/example.com/?period=realtime&filters=goal%3D%3DSignup")
    assert goal.context["numbers"]["visitors"] is None and "cannot apply goal==Signup" in goal.content.decode()
    assert client.get("/dashboard/example.com/realtime?filters=goal%3D%3DSignup").json()["visitors"] is None


def test_a_note_does_not_stretch_the_charts_time_axis(client, sources_site, owner):
    """A note's label runs right of its day; plotly stretched the axis to fit it (a 30-day
    chart drawn to the next March): the axis holds to the data, half a step each side."""
    add_member(sources_site, owner, "owner")
    client.force_login(owner)
    today = SiteInfo.from_model(sources_site).today()
    client.post(
        "/dashboard/example.com/annotations",
        {"date": today.isoformat(), "text": "A long note about the launch of the pricing page", "back": "?"},
    )
    layout = figures(client.get("/dashboard/example.com/?period=30d"))["visitors"]["layout"]
    low, high = layout["xaxis"]["range"]
    assert low.startswith((today - timedelta(days=30)).isoformat()) and high.startswith(today.isoformat())
    assert layout["annotations"][0]["text"].endswith("…") and len(layout["annotations"][0]["text"]) <= 26


def test_two_page_filters_with_visitors_are_no_empty_period(client, sources_site, owner):
    client.force_login(owner)
    html = client.get("/dashboard/example.com/?period=7d&filters=page%3D%3D%2F%3Bpage%21%3D%2Flaunch").content.decode()
    assert "No visits in this period" not in html
