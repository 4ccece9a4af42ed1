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
        Hit(
            now - timedelta(days=n % 20, minutes=5),
            f"/p{n % 9}",
            "pageview",
            identity_source(None, f"v{n % 120}", None, None),
        )
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


def visit_tracked_page(context, live_server, path: str, fragment: str = ""):
    """Open a page carrying the tracker in a new tab: one visit to example.com. The page is
    served on the test server's host (Chromium blocks a public page's requests to
    loopback), so the snippet carries data-allow-localhost, as documented."""
    tracked = context.new_page()
    tracker = f"{live_server.url}/static/tracker.js"
    tracked.route(
        f"{live_server.url}{path}",
        lambda route: route.fulfill(
            content_type="text/html",
            body=f'<!doctype html><title>Shop</title><script src="{tracker}" data-domain="example.com" data-allow-localhost></script><h1>Shop</h1>',
        ),
    )
    tracked.goto(f"{live_server.url}{path}{fragment}")
    return tracked


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
    page.click("#period-picker summary")  # (the picker's menu)
    page.click("#period-picker a:has-text('Last 7 days')")
    page.wait_for_url(re.compile(r"period=7d"))
    charts_drawn(page)
    since = info.today() - timedelta(days=6)
    expected = (
        sum(
            1
            for n in range(1500)
            if (datetime.now(UTC) - timedelta(days=n % 20, minutes=5)).astimezone(info.tz).date() >= since
        )
        + 1
    )
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
    visit_tracked_page(context, live_server, "/welcome")
    deadline = time.monotonic() + 15  # (no wait_for_function: our CSP forbids eval, rightly)
    while int(page.inner_text("#live-count")) <= before:
        assert time.monotonic() < deadline, (
            f"the live counter did not move: {problems} {r.smembers(f'tally:{{{site.pk}}}:pages:{info.today().isoformat()}')} {page.inner_text('#live-count')}"
        )
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
    labels, boxes = retention_labels(page)
    assert overlapping(boxes) == [], (labels, overlapping(boxes)[:5])  # (the cells' labels readable: none, here)


LEGENDS = ("visitors", "actives")


def laid_out(page, charts, layout=None):
    """Wait until each chart has been drawn in the layout its code chose for its width
    (data-layout: "phone" or "wide"; `layout`, if given) and at its box's width."""
    page.wait_for_function(
        """([charts, layout]) => charts.every(chart => {
        const el = document.getElementById('chart-' + chart);
        const chosen = el.getAttribute('data-layout');
        return chosen && (!layout || chosen === layout) && Math.abs(el._fullLayout.width - el.clientWidth) <= 1;
    })""",
        arg=[list(charts), layout],
        timeout=10_000,
    )
    return {chart: page.get_attribute(f"#chart-{chart}", "data-layout") for chart in charts}


def assert_boxes_hold_figures(page, charts):
    """Each chart's box as tall as its figure: plotly.js's responsive resize took the box's
    height, which was the CSS min-height from the second resize on (the figure squeezed
    into 220 px, or drawn over what follows)."""
    sizes = page.evaluate(
        """charts => charts.map(chart => {
        const el = document.getElementById('chart-' + chart);
        return [chart, el.clientHeight, el._fullLayout.height, el.querySelector('.main-svg').getBoundingClientRect().height];
    })""",
        list(charts),
    )
    assert all(box == figure == drawn for _, box, figure, drawn in sizes), sizes


def chart_widths(page, charts):
    return {chart: page.evaluate("id => document.getElementById(id).clientWidth", f"chart-{chart}") for chart in charts}


def assert_legends_placed(page):
    """Laid out as on a phone, a chart's legend sits under the plot and its dates, else above
    the plot; either way no legend name is over the plot (its drag layer)."""
    for chart in LEGENDS:

        def boxes(selector, chart=chart):
            found = [t.bounding_box() for t in page.locator(f"#chart-{chart} {selector}").all()]
            return [b for b in found if b is not None]  # (a label Plotly hides has no box: it overlaps nothing)

        names, dates = boxes("g.legend text"), boxes("g.xtick text")
        plot = page.locator(f"#chart-{chart} .nsewdrag").bounding_box()
        layout = page.get_attribute(f"#chart-{chart}", "data-layout")
        over = [
            b
            for b in names
            if b["y"] < plot["y"] + plot["height"]
            and b["y"] + b["height"] > plot["y"]
            and b["x"] < plot["x"] + plot["width"]
            and b["x"] + b["width"] > plot["x"]
        ]
        assert over == [], (chart, layout, over, plot)
        if layout == "phone":
            top, bottom = min(b["y"] for b in names), max(b["y"] + b["height"] for b in dates)
            assert top >= bottom >= plot["y"] + plot["height"], (chart, top, bottom, plot)
        else:
            assert max(b["y"] + b["height"] for b in names) <= plot["y"], (chart, names, plot)


def test_on_a_phone_the_legends_sit_under_their_plots(dashboard):
    """At 390 px the legends above the plots wrapped into the lines (three entries with the
    compared period's); on phones they go under the plot and its dates, on a laptop above."""
    page, problems, site, info = dashboard
    for width, layout in ((1280, "wide"), (390, "phone")):
        page.set_viewport_size({"width": width, "height": 844})
        page.goto(page.url.split("?")[0] + "?period=30d")
        charts_drawn(page)
        laid_out(page, LEGENDS, layout)
        assert_legends_placed(page)
    assert page.locator("#chart-visitors g.legend .traces").count() == 3  # (pageviews, visitors, the previous period's)
    assert problems == []


def test_the_legends_follow_each_charts_width_not_the_windows(dashboard):
    """The phone layout was decided from the window's width: from about 900 px (the grid's
    two columns) to 1100 each chart is 380 to 470 px wide, and the laptop's legend above the
    plot wrapped into the lines. It is decided from the chart's own width: at 844 px (one
    column, 762 px charts) and at 1280 (two, 480 px) the legends fit above, at 920 and 1000
    (two, 390 and 430 px) and on a phone they go under. (920, not 900: two columns with or
    without a 15 px scrollbar.)"""
    page, problems, site, info = dashboard
    expected = {844: "wide", 920: "phone", 1000: "phone", 1280: "wide", 390: "phone"}
    for width, layout in expected.items():
        page.set_viewport_size({"width": width, "height": 844})
        page.goto(page.url.split("?")[0] + "?period=30d")
        charts_drawn(page)
        chosen = laid_out(page, LEGENDS)
        assert chosen == dict.fromkeys(LEGENDS, layout), (width, chosen, chart_widths(page, LEGENDS))
        assert_legends_placed(page)
        if width == 920:  # (the grid's two columns: the charts side by side)
            tops = {page.locator(f"#chart-{chart}").bounding_box()["y"] for chart in LEGENDS}
            assert len(tops) == 1, tops
    assert problems == []


def test_turning_a_phone_moves_the_legends_with_the_width(dashboard):
    """The legends' place was decided at the first draw: a phone turned from portrait to
    landscape (or a window narrowed past the grid's two columns) kept them where they were.
    They follow each chart's width, both ways, without a reload: 920 px is a laptop's window
    but a phone's chart, 844 the other way round. And the charts keep their heights through
    resizes that move nothing (920 to 1000, 844 to 1280)."""
    page, problems, site, info = dashboard
    page.set_viewport_size({"width": 1280, "height": 844})
    page.goto(page.url.split("?")[0] + "?period=30d")
    charts_drawn(page)
    laid_out(page, LEGENDS, "wide")
    assert_legends_placed(page)
    heights = {}
    for width, layout in (
        (390, "phone"),
        (1280, "wide"),
        (920, "phone"),
        (1000, "phone"),
        (844, "wide"),
        (1280, "wide"),
        (390, "phone"),
    ):
        page.set_viewport_size({"width": width, "height": 844})
        laid_out(page, LEGENDS, layout)  # (and as wide as its card again)
        assert_legends_placed(page)
        assert_boxes_hold_figures(page, LEGENDS)
        heights.setdefault(layout, set()).add(
            page.evaluate("document.getElementById('chart-visitors')._fullLayout.height")
        )
    assert heights["phone"] == {360} and heights["wide"] == {300}, (
        heights
    )  # (taller on a phone by about what the legend takes)
    assert problems == []


def cells(page, unit):
    return [t for t in page.locator(f"#chart-retention-{unit} .heatmaplayer text").all_text_contents() if t]


def test_the_retention_labels_follow_the_width(dashboard):
    """The retention's short labels (the share alone) were chosen at the first draw. They
    follow the table's width: the share and the count where each cell has room for them,
    the share alone where it has room for that, none where not even that fits (20 cohorts
    on a phone: 24 px cells); the weekly table, hidden meanwhile, when shown."""
    page, problems, site, info = dashboard
    page.set_viewport_size({"width": 1280, "height": 844})
    page.goto(page.url.split("?")[0] + "?period=30d")
    charts_drawn(page)
    height = page.evaluate("document.getElementById('chart-retention-day')._fullLayout.height")  # (30 px a cohort)
    patterns = {"full": re.compile(r"\d+(\.\d+)?%\d+"), "short": re.compile(r"\d+%")}
    for width, kind in ((1280, "full"), (844, "full"), (390, "none"), (1280, "full"), (390, "none")):
        page.set_viewport_size({"width": width, "height": 844})
        laid_out(page, ["retention-day"])
        labels, boxes = retention_labels(page)
        texts = cells(page, "day")
        assert labels == kind and len(boxes) == len(texts), (width, labels, len(boxes), len(texts))
        assert all(patterns[kind].fullmatch(t) for t in texts) if kind != "none" else texts == [], (width, texts[:5])
        assert overlapping(boxes) == [], (width, overlapping(boxes)[:5])
        assert_boxes_hold_figures(page, ["retention-day"])
        assert page.evaluate("document.getElementById('chart-retention-day')._fullLayout.height") == height
    assert page.get_attribute("#chart-retention-week", "data-labels") is None  # (drawn while hidden: chosen when shown)
    page.click("[data-cohorts=week]")
    labels, boxes = retention_labels(page, "week")
    texts = cells(page, "week")
    assert labels != "none" and texts and all(patterns[labels].fullmatch(t) for t in texts), (labels, texts[:5])
    assert overlapping(boxes) == []
    assert_boxes_hold_figures(page, ["retention-week"])
    assert problems == []


def test_the_map_height_follows_the_width(dashboard):
    """The map's height (about half its width, 300 px at most: the world is twice as wide as
    high) was set at its first draw: a phone turned, it kept a strip or a tall box of blank.
    It follows the width, and the width that changed while its tab was closed once reopened."""
    page, problems, site, info = dashboard
    page.set_viewport_size({"width": 1280, "height": 844})
    page.goto(page.url.split("?")[0] + "?period=30d")
    page.click("#panel-locations [data-tab=map]")
    page.wait_for_selector("#chart-map .main-svg", timeout=15_000)

    def height_for(width):
        page.set_viewport_size({"width": width, "height": 844})
        page.wait_for_function(
            """() => {
            const el = document.getElementById('chart-map'), svg = el.querySelector('.main-svg').getBoundingClientRect();
            const height = Math.min(300, Math.round(el.clientWidth * 0.55));
            return Math.abs(svg.width - el.clientWidth) <= 1 && Math.abs(svg.height - height) <= 1 && el._fullLayout.height === height;
        }""",
            timeout=10_000,
        )
        return page.locator("#chart-map .main-svg").first.bounding_box()["height"]

    heights = [height_for(width) for width in (1280, 390, 844, 390)]
    assert heights == [264, 178, 300, 178], heights  # (480, 324 and 762 px wide)
    assert_boxes_hold_figures(page, ["map"])
    for width, height in ((1280, 264), (844, 300), (700, 300)):  # (the last at the same height: 762 then 618 px wide)
        page.click("#panel-locations [data-tab=country]")
        page.set_viewport_size({"width": width, "height": 844})
        laid_out(page, LEGENDS)  # (the other charts redrawn at their new widths: the resize is over)
        page.click("#panel-locations [data-tab=map]")
        assert height_for(width) == height, width
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
        lambda route: route.fulfill(
            content_type="text/html",
            body=f'<!doctype html><title>x</title><script src="{tracker}" data-domain="example.com"></script>',
        ),
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
            if (box := page.locator(selector).nth(n).bounding_box())
            and box["x"] + box["width"] > 390.5
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
    queue = (
        "window.plausible=window.plausible||function(){(window.plausible.q=window.plausible.q||[]).push(arguments)};"
    )
    page.route(
        f"{live_server.url}/shop",
        lambda route: route.fulfill(
            content_type="text/html",
            body=(
                f'<!doctype html><title>Shop</title><script>{queue} plausible("Download", {{props: {{file: "a.pdf"}}}});</script>'
                f'<script src="{tracker}" data-domain="shop.example" data-allow-localhost></script>'
            ),
        ),
    )
    sent = []
    page.on("request", lambda req: sent.append(orjson.loads(req.post_data)) if req.url.endswith("/api/event") else None)
    page.goto(f"{live_server.url}/shop")
    page.evaluate(
        '() => new Promise(done => tally("Signup", {props: {plan: "pro"}, revenue: {currency: "EUR", amount: 19}, callback: done}))'
    )
    deadline = time.monotonic() + 10
    while len(sent) < 3:
        assert time.monotonic() < deadline, sent
        page.wait_for_timeout(100)
    assert sorted(event["n"] for event in sent) == ["Download", "Signup", "pageview"]
    from analytics.store import keys

    today = SiteInfo.from_model(site).today()
    # (each event goes through the inbox to the drainer on its own: the Signup may be
    # counted before the Download queued ahead of it, so wait for both)
    deadline = time.monotonic() + 10
    while not r.exists(keys.revenue(site.pk, today)) or r.scard(keys.props_index(site.pk, today)) < 2:
        assert time.monotonic() < deadline, "the Signup or the Download was not counted"
        page.wait_for_timeout(100)
    groups = {g.decode() for g in r.smembers(keys.props_index(site.pk, today))}
    assert groups == {"Download\x1ffile\x1fa.pdf", "Signup\x1fplan\x1fpro"}
    assert r.hget(keys.revenue(site.pk, today), "Signup\x1fEUR") == b"1900"


def retention_labels(page, unit="day"):
    """Once the retention's cell labels were chosen for the chart's width as drawn
    (data-labels, for data-labels-width): which kind ("full", "short" or "none") and the
    box of each label shown, as [text, left, top, right, bottom] (the heatmap's SVG text)."""
    chart = f"chart-retention-{unit}"
    page.wait_for_function(
        """id => {
        const el = document.getElementById(id), layout = el._fullLayout;
        return layout && Math.abs(layout.width - el.clientWidth) <= 1 && el.getAttribute('data-labels')
            && el.getAttribute('data-labels-width') === String(layout.width);
    }""",
        arg=chart,
        timeout=10_000,
    )
    boxes = page.evaluate(
        """id => [...document.querySelectorAll('#' + id + ' .heatmaplayer text')]
        .filter(t => t.textContent && getComputedStyle(t).display !== 'none' && getComputedStyle(t).visibility !== 'hidden')
        .map(t => { const b = t.getBoundingClientRect(); return [t.textContent, b.left, b.top, b.right, b.bottom]; })
        .filter(([, left, top, right, bottom]) => right > left && bottom > top)""",
        chart,
    )
    return page.get_attribute(f"#{chart}", "data-labels"), boxes


def overlapping(boxes):
    """The pairs of labels whose boxes share some area (touching is not overlapping)."""
    return [
        (a[0], b[0])
        for n, a in enumerate(boxes)
        for b in boxes[n + 1 :]
        if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]
    ]


def test_the_retention_labels_never_overlap(user_page, live_server):
    """With 30 day cohorts (30 columns) the cells' labels ran into each other at 844 px and
    on a phone. Each width shows the richest labels every cell has room for (the share and
    the count, the share alone, or none: the colour and the hover remain), chosen again when
    the width changes, both ways; drawn at each width first, then resized."""
    page = user_page
    url = f"{live_server.url}/dashboard/demo.example/?period=30d"
    shown = {}
    for width in (1280, 844, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url)
        page.wait_for_selector("#chart-retention-day .main-svg", timeout=15_000)
        assert page.evaluate("document.getElementById('chart-retention-day').data[0].x.length") == 30
        labels, boxes = retention_labels(page)
        assert overlapping(boxes) == [], (width, labels, overlapping(boxes)[:5])
        shown[width] = (labels, len(boxes))
    assert shown[1280][0] != "none" and shown[1280][1] == 465, shown  # (a label in each of the 30 cohorts' cells)
    assert shown[390] == ("none", 0), shown  # (16 px cells)
    for width in (844, 1280, 390, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        labels, boxes = retention_labels(page)
        assert overlapping(boxes) == [], (width, labels, overlapping(boxes)[:5])
        assert (labels, len(boxes)) == shown[width], (width, labels, len(boxes), shown)
    assert "%{z}%" in page.evaluate(
        "document.getElementById('chart-retention-day').data[0].hovertemplate"
    )  # (the share, hidden or not)
    page.set_viewport_size({"width": 390, "height": 900})
    retention_labels(page)
    page.click("[data-cohorts=week]")
    labels, boxes = retention_labels(page, "week")
    assert boxes and overlapping(boxes) == [], (labels, overlapping(boxes)[:5])
    assert page.problems == []


def test_recommendations_have_a_page_of_their_own(dashboard, live_server):
    page, problems, site, info = dashboard
    page.click("text=Recommendations for a visitor")
    page.wait_for_url(re.compile(r"/dashboard/example\.com/recommendations/$"))
    expect(page.locator('#filter-stats [data-stat="filters"]')).not_to_have_text("–")  # (the filters' stats came)
    page.fill("#recommend-user", "nobody-yet")
    page.click("#recommend-form button[type=submit]")
    expect(page.locator("#recommend-pages li").first).to_be_visible()
    assert not problems, problems


def test_the_goals_card_has_a_properties_tab(user_page, live_server, live_stream):
    page = user_page
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d")
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    page.locator("#goals [data-tab=properties]").click()
    pane = page.locator("#goals [data-pane=properties]")
    expect(pane).to_be_visible()
    expect(pane.locator("table.properties th").first).to_have_text("plan")  # (the demo's signups send a plan)
    expect(page.locator("#goals [data-pane=goals]")).to_be_hidden()
    assert not page.problems, page.problems


def test_the_realtime_view_follows_a_new_visit_without_a_reload(dashboard, live_server, context):
    page, problems, site, info = dashboard
    page.goto(f"{live_server.url}/dashboard/example.com/?period=realtime")
    page.wait_for_selector("#chart-minutes .main-svg", timeout=15_000)
    before = int(page.get_attribute("#live", "data-visitors"))
    page.evaluate("window.tallyMarker = 'same page'")  # (gone if the page reloads)
    visit_tracked_page(context, live_server, "/realtime-welcome")
    deadline = time.monotonic() + 15
    while int(page.get_attribute("#live", "data-visitors")) <= before:
        assert time.monotonic() < deadline, f"the realtime view did not move: {problems}"
        page.wait_for_timeout(200)
    assert page.evaluate("window.tallyMarker") == "same page"  # (updated in place, no reload)
    expect(page.locator("#realtime-page li .name", has_text="/realtime-welcome")).to_have_count(1)
    assert not problems, problems


def test_a_realtime_row_filters_the_realtime_view(dashboard, live_server, context):
    page, problems, site, info = dashboard
    visit_tracked_page(context, live_server, "/realtime-filtered")
    page.goto(f"{live_server.url}/dashboard/example.com/?period=realtime")
    row = page.locator("#realtime-page li a.name", has_text="/realtime-filtered")
    expect(row).to_have_count(1)
    row.click()
    page.wait_for_url(re.compile(r"period=realtime&filters=page%3D%3D%2Frealtime-filtered"))
    expect(page.locator("#segment-filters .chip")).to_contain_text("Page is /realtime-filtered")
    expect(page.locator("#realtime-visitors")).to_have_text("1")
    expect(page.locator("#realtime-page li .name")).to_have_count(1)
    assert page.locator("#chart-minutes").count() == 0  # (the minute counts are everyone's)
    assert not problems, problems


def test_a_browser_that_opted_out_is_not_counted(dashboard, live_server, context, r):
    """#tally-ignore=true sets the flag (localStorage tally_ignore) on the site's pages; the
    tracker then sends nothing from that browser, and #tally-ignore=false counts it again."""
    page, problems, site, info = dashboard
    pages = f"tally:{{{site.pk}}}:pages:{info.today().isoformat()}"
    ignored = visit_tracked_page(context, live_server, "/ignored-page", "#tally-ignore=true")
    assert ignored.evaluate("localStorage.getItem('tally_ignore')") == "true"
    ignored.evaluate("plausible('Signup')")
    counted = visit_tracked_page(context, live_server, "/counted-page", "#tally-ignore=false")
    assert counted.evaluate("localStorage.getItem('tally_ignore')") is None
    deadline = time.monotonic() + 15
    while b"/counted-page" not in r.smembers(pages):
        assert time.monotonic() < deadline, "the page counted again never arrived"
        time.sleep(0.2)
    assert b"/ignored-page" not in r.smembers(pages)
