"""The dashboard in a real browser: login, charts drawn, period switch, page search, the
live counter moving when a page with tracker.js opens in another tab, escaping, phone width."""
import re
import time
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from analytics import rollups
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import Site
from analytics.sites import SiteInfo

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "correct horse battery"
XSS = "/<img src=x onerror=alert(1)>"


@pytest.fixture
def dashboard(r, live_server, live_stream, django_user_model, context):
    django_user_model.objects.create_superuser("admin", "", PASSWORD)
    site = Site.objects.create(domain="example.com")
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    hits = [
        Hit(now - timedelta(days=n % 20, minutes=5), f"/p{n % 9}", "pageview", identity_source(None, f"v{n % 120}", None, None))
        for n in range(1500)
    ]
    hits.append(Hit(now - timedelta(days=1), XSS, "pageview", identity_source(None, "x", None, None)))
    record(r, info, hits)
    rollups.rollup(r, site, info.today() - timedelta(days=20), info.today())

    page = context.new_page()
    problems = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.streams = []
    page.on("response", lambda resp: page.streams.append(resp.status) if "/live/example.com" in resp.url else None)
    page.goto(f"{live_server.url}/accounts/login/?next=/dashboard/example.com/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/dashboard/example\.com/"))
    return page, problems, site, info


def charts_drawn(page):
    for chart in ("visitors", "actives", "retention-day"):
        page.wait_for_selector(f"#chart-{chart} .main-svg", timeout=15_000)


def card(page, key):
    return int(page.inner_text(f'[data-metric="{key}"] .value').replace(",", ""))


def test_charts_periods_search_and_live(dashboard, r, live_server, context):
    page, problems, site, info = dashboard
    charts_drawn(page)
    assert card(page, "pageviews") == 1501

    # switch the period: a week holds the last 7 days' pageviews only
    page.click("text=Last 7 days")
    page.wait_for_url(re.compile(r"period=7d"))
    charts_drawn(page)
    since = info.today() - timedelta(days=6)
    expected = sum(1 for n in range(1500) if (datetime.now(UTC) - timedelta(days=n % 20, minutes=5)).astimezone(info.tz).date() >= since) + 1
    assert card(page, "pageviews") == expected

    # the retention toggle shows weekly cohorts
    page.click("[data-cohorts=week]")
    page.wait_for_selector("#chart-retention-week .main-svg")
    assert page.is_hidden("#chart-retention-day")

    # page search: suggestions, then that page's own chart
    page.fill("#page-search", "/p")
    expect(page.locator("#page-suggestions li")).to_have_count(9)
    assert page.inner_text("#page-suggestions li >> nth=0") == "/p0"
    page.click("#page-suggestions li >> nth=0")
    page.wait_for_selector("#chart-page .main-svg")
    assert page.inner_text("#page-title") == "Visitors of /p0"

    # live: open a tracked page in a second tab; the first tab's counter goes up
    expect(page.locator("#live-count")).not_to_have_text("–")
    before = int(page.inner_text("#live-count"))
    tracked = context.new_page()
    tracker = f"{live_server.url}/static/tracker.js"
    # The tracked page is served on the test server's host (Chromium blocks a public page's
    # requests to loopback), so the snippet carries data-allow-localhost, as documented.
    tracked.route(
        f"{live_server.url}/welcome",
        lambda route: route.fulfill(
            content_type="text/html",
            body=f'<!doctype html><title>Shop</title><script src="{tracker}" data-domain="example.com" data-allow-localhost></script><h1>Shop</h1>',
        ),
    )
    tracked.goto(f"{live_server.url}/welcome")
    deadline = time.monotonic() + 15  # (no wait_for_function: our CSP forbids eval, rightly)
    while int(page.inner_text("#live-count")) <= before:
        assert time.monotonic() < deadline, f"the live counter did not move: {problems} {r.smembers(f'tally:{{{site.pk}}}:pages:{info.today().isoformat()}')} {page.inner_text('#live-count')}"
        page.wait_for_timeout(200)
    assert page.streams and set(page.streams) == {200}  # pushed over server-sent events, not polled
    assert "/welcome" in r.smembers(f"tally:{{{site.pk}}}:pages:{info.today().isoformat()}").__repr__()
    assert problems == []


def test_public_strings_are_shown_as_text(dashboard):
    page, problems, site, info = dashboard
    page.goto(page.url.split("?")[0] + "?period=7d")
    charts_drawn(page)
    assert XSS in page.inner_text("#panel-pages")
    assert page.locator("#panel-pages img").count() == 0
    assert problems == []


def test_it_fits_a_phone(dashboard, context):
    page, problems, site, info = dashboard
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    charts_drawn(page)
    width = page.locator("html").bounding_box()["width"]
    assert width <= 391, f"the page is {width}px wide on a 390px phone"
    cells = [t for t in page.locator("#chart-retention-day svg text").all_text_contents() if t and t.endswith("%")]
    assert cells and all(re.fullmatch(r"\d+%", t) for t in cells), [t for t in cells if not re.fullmatch(r"\d+%", t)][:5]  # shares only


def assert_legends_placed(page, width):
    """On phones (under 600 px) the legends sit under the plot and its dates, else above."""
    for chart in ("visitors", "actives"):
        def boxes(selector):
            return [t.bounding_box() for t in page.locator(f"#chart-{chart} {selector}").all()]

        names, dates = boxes("g.legend text"), boxes("g.xtick text")
        plot = page.locator(f"#chart-{chart} .nsewdrag").bounding_box()
        if width < 600:
            top, bottom = min(b["y"] for b in names), max(b["y"] + b["height"] for b in dates)
            assert top >= bottom >= plot["y"] + plot["height"], (width, chart, top, bottom, plot)
        else:
            assert max(b["y"] + b["height"] for b in names) <= plot["y"], (width, chart, names, plot)


def test_on_a_phone_the_legends_sit_under_their_plots(dashboard):
    """At 390 px the legends above the plots wrapped into the lines (three entries with the
    compared period's); on phones they go under the plot and its dates, on a laptop above."""
    page, problems, site, info = dashboard
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 844})
        page.goto(page.url.split("?")[0] + "?period=30d")
        charts_drawn(page)
        assert_legends_placed(page, width)
    assert page.locator("#chart-visitors g.legend .traces").count() == 3  # (pageviews, visitors, the previous period's)
    assert problems == []


def test_turning_a_phone_moves_the_legends_with_the_width(dashboard):
    """The legends' place was decided at the first draw: a phone turned from portrait to
    landscape (or a window narrowed past 600 px) kept them where they were. They follow
    the width, both ways, without a reload."""
    page, problems, site, info = dashboard
    page.set_viewport_size({"width": 1280, "height": 844})
    page.goto(page.url.split("?")[0] + "?period=30d")
    charts_drawn(page)
    assert_legends_placed(page, 1280)
    heights = {}
    for width, narrow in ((390, True), (1280, False), (390, True)):
        page.set_viewport_size({"width": width, "height": 844})
        page.wait_for_function("""narrow => ['visitors', 'actives'].every(chart => {
            const legend = document.getElementById('chart-' + chart)._fullLayout.legend;
            return (legend.yanchor === 'top' && legend.y < 0) === narrow;
        })""", arg=narrow, timeout=5_000)
        page.wait_for_timeout(300)  # (plotly.js redraws the legend after the layout: let it settle)
        assert_legends_placed(page, width)
        heights[narrow] = page.locator("#chart-visitors .main-svg").first.bounding_box()["height"]
        widths = page.evaluate("['visitors', 'actives'].map(c => document.getElementById('chart-' + c))"
                               ".map(el => [el.clientWidth, el._fullLayout.width])")
        assert all(abs(card - drawn) <= 1 for card, drawn in widths), (width, widths)  # (still as wide as its card)
    assert heights[True] > heights[False]  # (taller on a phone by about what the legend takes)
    assert problems == []


def test_exports_download_and_big_ones_show_progress(dashboard):
    page, problems, site, info = dashboard
    page.goto(page.url.split("?")[0] + "?period=7d")
    with page.expect_download() as download:
        page.click("[data-export*='/reports/json']")
    assert download.value.suggested_filename.startswith("tally-example.com-")
    assert download.value.suggested_filename.endswith(".json")

    page.goto(page.url.split("?")[0] + "?period=90d")  # longer than 31 days: a background job
    page.click("[data-export*='/reports/csv']")
    expect(page.locator("#export-status a")).to_have_text(re.compile(r"Download tally-example\.com-.*\.zip"))
    with page.expect_download() as download:
        page.click("#export-status a")
    assert download.value.suggested_filename.endswith(".zip")
    assert problems == []


def test_the_tracker_says_why_it_ignores_localhost(context, live_server, r):
    """Issue 11: on localhost the tracker sent nothing, silently."""
    page = context.new_page()
    messages = []
    page.on("console", lambda m: messages.append((m.type, m.text)))
    sent = []
    page.on("request", lambda req: sent.append(req.url) if "/api/event" in req.url else None)
    tracker = f"{live_server.url}/static/tracker.js"
    page.route(
        f"{live_server.url}/local",
        lambda route: route.fulfill(content_type="text/html", body=f'<!doctype html><title>x</title><script src="{tracker}" data-domain="example.com"></script>'),
    )
    page.goto(f"{live_server.url}/local")
    page.wait_for_timeout(300)
    host = live_server.url.split("://")[1].rsplit(":", 1)[0]
    assert ("warning", f"Tally: not counting {host} (local); add data-allow-localhost to count it") in messages
    assert sent == []


def test_nothing_sticks_out_on_a_phone(dashboard):
    """Issue 11: at 390 px the site list was 392 px wide and the Recommend button stuck out."""
    page, problems, site, info = dashboard
    page.set_viewport_size({"width": 390, "height": 844})
    origin = page.url.split("/dashboard")[0]
    for path in ("/", "/dashboard/example.com/", "/dashboard/example.com/pages"):
        page.goto(origin + path)
        page.wait_for_load_state("load")
        wide = [
            (selector, box["x"] + box["width"])
            for selector in ("table", "button", "form", ".card", "pre", "input")
            for n in range(page.locator(selector).count())
            if (box := page.locator(selector).nth(n).bounding_box()) and box["x"] + box["width"] > 390.5
            and not page.locator(selector).nth(n).evaluate("e => !!e.closest('.chart, pre, .scroll')")
        ]
        assert wide == [], (path, wide)
    assert problems == []


def test_the_tracker_sends_custom_events_with_props_and_revenue(context, live_server, r, db):
    """tally("Signup", {props, revenue}) after load, and a plausible() call queued before
    the script arrived (Plausible's snippet), are both counted with their properties."""
    import orjson

    site = Site.objects.create(domain="shop.example")
    page = context.new_page()
    tracker = f"{live_server.url}/static/tracker.js"
    queue = "window.plausible=window.plausible||function(){(window.plausible.q=window.plausible.q||[]).push(arguments)};"
    page.route(
        f"{live_server.url}/shop",
        lambda route: route.fulfill(content_type="text/html", body=(
            f'<!doctype html><title>Shop</title><script>{queue} plausible("Download", {{props: {{file: "a.pdf"}}}});</script>'
            f'<script src="{tracker}" data-domain="shop.example" data-allow-localhost></script>')),
    )
    sent = []
    page.on("request", lambda req: sent.append(orjson.loads(req.post_data)) if req.url.endswith("/api/event") else None)
    page.goto(f"{live_server.url}/shop")
    page.evaluate('() => new Promise(done => tally("Signup", {props: {plan: "pro"}, revenue: {currency: "EUR", amount: 19}, callback: done}))')
    deadline = time.monotonic() + 10
    while len(sent) < 3:
        assert time.monotonic() < deadline, sent
        page.wait_for_timeout(100)
    assert sorted(event["n"] for event in sent) == ["Download", "Signup", "pageview"]
    from analytics.store import keys

    today = SiteInfo.from_model(site).today()
    deadline = time.monotonic() + 10
    while not r.exists(keys.revenue(site.pk, today)):
        assert time.monotonic() < deadline, "the Signup was not counted"
        page.wait_for_timeout(100)
    groups = {g.decode() for g in r.smembers(keys.props_index(site.pk, today))}
    assert groups == {"Download\x1ffile\x1fa.pdf", "Signup\x1fplan\x1fpro"}
    assert r.hget(keys.revenue(site.pk, today), "Signup\x1fEUR") == b"1900"
