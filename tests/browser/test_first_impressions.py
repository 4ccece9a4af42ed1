"""What a new user meets (issue 11): the demo site and an empty site, on a laptop (1440 px)
and a phone (390 px): nothing wider than the screen, no console error, Today drawn by the
hour, and the numbers on the page agreeing with the API and with each other."""

import io
import re

import pytest
from django.core.management import call_command

from analytics.models import Site

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "correct horse battery"
WIDTHS = [1440, 390]


@pytest.fixture
def user_page(r, live_server, live_stream, django_user_model, context):
    """A logged-in tab collecting console errors, page errors and failed requests."""
    django_user_model.objects.create_superuser("admin", "", PASSWORD)
    page = context.new_page()
    problems = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("response", lambda resp: problems.append(f"{resp.status} {resp.url}") if resp.status >= 400 else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/$"))
    return page, problems


@pytest.fixture
def demo(r, db):
    call_command("demo", "--visitors", "60", stdout=io.StringIO(), stderr=io.StringIO())
    return Site.objects.get(domain="demo.example")


def open_at(page, url, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    page.wait_for_load_state("load")


def overflow(page) -> int:
    """How far the page is wider than the screen (0: nothing to scroll sideways)."""
    return page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")


def charts_drawn(page):
    for chart in ("visitors", "actives", "retention-day"):
        page.wait_for_selector(f"#chart-{chart} .main-svg", timeout=15_000)


def number(text: str) -> int:
    return int(text.replace(",", ""))


def page_rows(page) -> list[tuple[int, int]]:
    """(visitors, pageviews) of each row of the pages table (the last two number cells)."""
    rows = []
    for row in page.locator("table.pages tr").all():
        cells = row.locator("td.num").all_inner_texts()
        if len(cells) >= 2:
            rows.append((number(cells[-2]), number(cells[-1])))
    return rows


@pytest.mark.parametrize("width", WIDTHS)
def test_the_demo_site_reads_true_at_every_width(user_page, demo, live_server, width):
    page, problems = user_page
    base = f"{live_server.url}/dashboard/demo.example/"
    for period in ("today", "7d", "30d", "90d"):
        open_at(page, f"{base}?period={period}", width)
        charts_drawn(page)
        assert overflow(page) <= 0, (period, overflow(page))

        # the cards' visitors are the API's aggregate: one union, the same number
        start, end = page.evaluate(
            "() => [...document.querySelectorAll('#custom-range input[type=date]')].map(i => i.value)"
        )
        api = page.request.get(
            f"{live_server.url}/api/v1/stats/aggregate?site=demo.example&from={start}&to={end}"
            "&metrics=visitors,pageviews"
        ).json()["results"]
        assert number(page.inner_text('[data-metric="visitors"] .value')) == api["visitors"]["value"], period
        assert number(page.inner_text('[data-metric="pageviews"] .value')) == api["pageviews"]["value"], period

        # no page with more visitors than views, in the panel or in the full list
        for visitors, views in page_rows(page):
            assert visitors <= views, period

        if period == "today":  # drawn by the hour: 24 points, labelled by the hour
            points = page.evaluate("() => document.getElementById('chart-visitors').data.map(t => t.x.length)")
            assert points and set(points) == {24}, points
            actives = page.evaluate("() => document.getElementById('chart-actives').data.map(t => t.x.length)")
            assert set(actives) == {30}, actives  # (a day alone would be a dot)
    open_at(page, f"{base}pages?period=90d", width)
    assert overflow(page) <= 0
    rows = page_rows(page)
    assert len(rows) == 50 and all(visitors <= views for visitors, views in rows)
    assert problems == []


@pytest.mark.parametrize("width", WIDTHS)
def test_an_empty_site_waits_for_its_first_event(user_page, live_server, width):
    page, problems = user_page
    Site.objects.create(domain="new.example")
    for path in ("/", "/dashboard/new.example/?period=today", "/dashboard/new.example/"):
        open_at(page, live_server.url + path, width)
        assert overflow(page) <= 0, (path, overflow(page))
    assert "Waiting for the first event" in page.inner_text("main")
    assert 'data-domain="new.example"' in page.inner_text("main")  # the snippet, as text to copy
    assert page.locator(".main-svg").count() == 0  # no empty axes
    assert problems == []

    open_at(page, f"{live_server.url}/dashboard/no-such.example/", width)  # the product's own 404
    assert overflow(page) <= 0
    assert "Tally" in page.title() and page.locator("link[rel=stylesheet]").count()
    assert problems[0] == f"404 {live_server.url}/dashboard/no-such.example/" and all("404" in p for p in problems)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_demo_goals_show_converters_rates_and_plans(user_page, demo, live_server, width):
    page, problems = user_page
    open_at(page, f"{live_server.url}/dashboard/demo.example/?period=30d", width)
    text = page.inner_text("#goals")
    assert "Signup" in text and "Read the docs" in text and "Pricing" in text
    assert "plan:" in text and ("EUR" in text or width < 600)  # (revenue and event columns fold away on phones)
    assert overflow(page) <= 0
    assert problems == []


def test_a_site_fed_from_an_access_log_has_its_panels(user_page, live_server, r, tmp_path):
    """Issue 12: history imported with import_log shows sources, devices and countries."""
    from datetime import datetime, timedelta

    Site.objects.create(domain="logs.example")
    yesterday = datetime.now() - timedelta(days=1)
    stamp = yesterday.strftime("%d/%b/%Y:10:%M:%S +0000")
    firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"
    iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
    lines = [
        f'8.8.{n}.1 - - [{stamp}] "GET /p{n % 3}?utm_source=newsletter HTTP/1.1" 200 512 "https://www.google.com/" "{firefox if n % 2 else iphone}"'
        for n in range(40)
    ]
    log = tmp_path / "access.log"
    log.write_text("\n".join(lines) + "\n")
    call_command("import_log", "--site", "logs.example", str(log), stdout=io.StringIO(), stderr=io.StringIO())
    page, problems = user_page
    open_at(page, f"{live_server.url}/dashboard/logs.example/?period=7d", 1440)
    for panel, expected in (
        ("sources", "newsletter"),
        ("devices", "Firefox"),
        ("locations", "United States"),
        ("pages", "/p1"),
    ):
        text = page.inner_text(f"#panel-{panel}")
        if panel == "sources":
            page.click("#panel-sources [data-tab=source]")
            page.wait_for_selector("#panel-sources [data-pane=source] ol.rows li")
            text = page.inner_text("#panel-sources [data-pane=source]")
        assert expected in text, (panel, text)
    assert number(page.inner_text('[data-metric="visits"] .value')) == 40
    assert problems == []
