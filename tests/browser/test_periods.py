"""The period picker in a real browser (issue 35): Plausible's presets and keyboard
shortcuts, the arrows to the periods before and after, the list of shortcuts on `?`, and
the period remembered per site."""

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from analytics.models import Site
from analytics.sites import SiteInfo

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def shown(page) -> str:
    return page.locator("#period-picker summary").inner_text()


def test_shortcuts_arrows_and_the_remembered_period(user_page, live_server, live_stream):
    page = user_page
    today = SiteInfo.from_model(Site.objects.get(domain="demo.example")).today()
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d&filters=source%3D%3DGoogle")
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    assert shown(page).startswith("Last 30 days")

    page.keyboard.press("w")  # Plausible's W: the last 7 days, the filters kept
    page.wait_for_url(re.compile(r"period=7d"))
    assert "filters=source" in page.url and shown(page).startswith("Last 7 days")
    page.keyboard.press("ArrowLeft")  # the 7 days before
    page.wait_for_url(re.compile(r"period=custom"))
    first, last = today - timedelta(days=13), today - timedelta(days=7)
    assert f"from={first.isoformat()}" in page.url and f"to={last.isoformat()}" in page.url
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(r"period=7d"))
    expect(page.locator(".periods .step.off")).to_have_count(1)  # (nothing after a period that reaches today)

    page.keyboard.press("m")
    page.wait_for_url(re.compile(r"period=month"))
    assert shown(page).startswith("Month to date")
    page.keyboard.press("?")
    expect(page.locator("dialog#shortcuts")).to_be_visible()
    expect(page.locator("dialog#shortcuts")).to_contain_text("Last 12 months")
    page.keyboard.press("Escape")
    expect(page.locator("dialog#shortcuts")).to_be_hidden()
    assert "filters=source" in page.url  # (Esc closed the list; it cleared no filters)
    page.locator("#filter-menu summary").click()
    expect(page.locator("#filter-value")).to_be_focused()
    page.keyboard.press("Escape")  # (typing in the menu: Esc closes it)
    expect(page.locator("#filter-menu")).not_to_have_attribute("open", "")
    assert "filters=source" in page.url

    page.locator("#period-picker summary").click()  # the menu, by mouse
    page.locator("#period-picker a", has_text="Year to date").click()
    page.wait_for_url(re.compile(r"period=year"))
    page.goto(f"{live_server.url}/dashboard/demo.example/")  # no period named: the one last chosen
    page.wait_for_url(re.compile(r"period=year"))
    assert shown(page).startswith("Year to date")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "page-search"
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("s")  # Plausible's S: the last 6 months
    page.wait_for_url(re.compile(r"period=6mo"))
    assert shown(page).startswith("Last 6 months")
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    active = page.locator(".intervals a.active").inner_text()
    page.keyboard.press("i")  # the chart by the next interval
    page.wait_for_url(re.compile(r"interval="))
    assert page.locator(".intervals a.active").inner_text() != active

    page.goto(f"{live_server.url}/dashboard/demo.example/?period=7d&filters=source%3D%3DGoogle")
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    page.keyboard.press("Escape")  # Plausible's Esc: clear all filters
    page.wait_for_url(re.compile(r"period=7d$"))
    expect(page.locator(".chip")).to_have_count(0)
    assert not page.problems, page.problems


def points(page) -> int:
    return page.evaluate("document.getElementById('chart-visitors').data[0].x.length")


def test_the_chart_by_interval_by_metric_and_zoomed_by_a_click(user_page, live_server, live_stream):
    page = user_page
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=12mo")
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    assert page.locator(".intervals a.active").inner_text() == "Month"
    assert points(page) in (12, 13)  # (a month a point: 12 calendar months, this one to date)
    page.locator(".intervals a", has_text="Week").click()
    page.wait_for_url(re.compile(r"interval=week"))
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    assert 52 <= points(page) <= 54

    page.locator('a.card.metric[data-metric="bounce_rate"]').click()  # a card: the chart shows its metric
    page.wait_for_url(re.compile(r"metric=bounce_rate"))
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    assert "interval=week" in page.url
    expect(page.locator("#chart-visitors").locator("..").locator("h2")).to_have_text("Bounce rate")
    assert page.evaluate("document.getElementById('chart-visitors').data[0].name") == "Bounce rate (%)"

    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d")
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    assert points(page) == 30 and page.locator(".intervals a.active").inner_text() == "Day"
    page.wait_for_selector("#chart-visitors[data-links]", state="attached", timeout=15_000)  # (its clicks followed)
    # a click on a day's point opens that day, by the hour
    day = page.evaluate("document.getElementById('chart-visitors').data[1].x[10]")
    page.evaluate(
        "(() => { const el = document.getElementById('chart-visitors');"
        " el.emit('plotly_click', {points: [{pointIndex: 10, x: el.data[1].x[10]}]}); })()"
    )
    page.wait_for_url(re.compile(rf"from={day}&to={day}"))
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    assert page.locator(".intervals a.active").inner_text() == "Hour"
    assert not page.problems, page.problems
