"""Filters in a real browser (issue 15): clicking a source row filters every card and
panel, the chip shows it and removes it, and the URL alone restores it."""

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from analytics.models import Site
from analytics.queries import filtered, segments
from analytics.sites import SiteInfo
from tests.browser.test_panels import rows

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def card(page, metric) -> str:
    return page.locator(f".card.metric[data-metric={metric}] .value").inner_text()


def test_clicking_a_source_filters_every_card_and_panel_and_the_chip_removes_it(user_page, live_server, live_stream, r):
    page = user_page
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d")
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    everyone = card(page, "visitors")
    page.locator("#panel-sources [data-tab=source]").click()
    pane = page.locator("#panel-sources [data-pane=source]")
    expect(pane.locator(".list[data-loaded]")).to_have_count(1)
    pane.locator("ol.rows a.name", has_text=re.compile(r"^Google$")).click()

    page.wait_for_url(re.compile(r"filters=source%3D%3DGoogle"))
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    expect(page.locator("#segment-filters .chip")).to_have_count(1)
    expect(page.locator("#segment-filters .chip")).to_contain_text("Source is Google")
    # every card: the filtered audience's numbers, as the read API counts them
    info = SiteInfo.from_model(Site.objects.get(domain="demo.example"))
    end = info.today()
    expected, _ = filtered.summary(r, info, segments.parse("source==Google"), end - timedelta(days=29), end)
    assert card(page, "visitors") == f"{expected['visitors']:,}" != everyone
    assert card(page, "visits") == f"{expected['visits']:,}"  # (a single value: its own visits)
    # every panel: the sources list holds Google alone; the others are narrowed too
    page.locator("#panel-sources [data-tab=source]").click()
    expect(page.locator("#panel-sources [data-pane=source] .list[data-loaded]")).to_have_count(1)
    assert rows(page.locator("#panel-sources [data-pane=source]")) == ["google.com"]  # (its referrers: a drill-down)
    country_total = sum(
        int(c.replace(",", ""))
        for c in page.locator("#panel-locations [data-pane=country] ol.rows .count").all_inner_texts()
    )
    assert 0 < country_total <= expected["visitors"] * 2

    # the URL restores the view
    filtered_url = page.url
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d")
    page.goto(filtered_url)
    expect(page.locator("#segment-filters .chip")).to_contain_text("Source is Google")
    assert card(page, "visitors") == f"{expected['visitors']:,}"

    # the chip removes the filter
    page.locator("#segment-filters .chip .remove").click()
    page.wait_for_url(re.compile(r"/dashboard/demo\.example/\?period=30d$"))
    expect(page.locator("#segment-filters .chip")).to_have_count(0)
    assert card(page, "visitors") == everyone
    assert not page.problems, page.problems


def test_the_funnel_chart_draws_the_demo_funnel_and_follows_the_filters(user_page, live_server, live_stream, r):
    page = user_page
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d")
    chart = page.locator("#funnels .funnel .chart")
    expect(chart.locator(".main-svg").first).to_be_visible(timeout=15_000)
    label = chart.get_attribute("aria-label")
    assert label.startswith("Funnel Signup journey: / ") and "event:Signup" in label
    first = int(re.search(r": / (\d+) visitors", label).group(1))
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d&filters=source%3D%3DGoogle")
    narrowed = int(
        re.search(r": / (\d+) visitors", page.locator("#funnels .funnel .chart").get_attribute("aria-label")).group(1)
    )
    assert 0 < narrowed < first
    assert not page.problems, page.problems


def test_the_filter_menu_builds_is_not_and_contains_filters_and_a_chip_edits_itself(
    user_page, live_server, live_stream, r
):
    page = user_page
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d")
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    everyone = card(page, "visitors")
    page.locator("#filter-menu summary").click()
    page.select_option("#filter-prop", "source")
    page.select_option("#filter-op", "!=")
    page.locator("#filter-value").click()
    expect(page.locator('#filter-suggestions option[value="Google"]')).to_be_attached()  # (the period's sources)
    page.fill("#filter-value", "Google")
    page.locator("#filter-form button[type=submit]").click()
    page.wait_for_url(re.compile(r"filters=source%21%3DGoogle"))
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    expect(page.locator("#segment-filters .chip")).to_contain_text("Source is not Google")
    info = SiteInfo.from_model(Site.objects.get(domain="demo.example"))
    end = info.today()
    expected, _ = filtered.summary(r, info, segments.parse("source!=Google"), end - timedelta(days=29), end)
    assert card(page, "visitors") == f"{expected['visitors']:,}" != everyone

    page.locator("#segment-filters .chip .edit").click()  # the chip opens the menu on itself
    page.wait_for_url(re.compile(r"edit=0"))
    assert page.locator("#filter-menu").get_attribute("open") is not None
    assert page.input_value("#filter-value") == "Google" and page.input_value("#filter-op") == "!="
    page.select_option("#filter-op", "~")
    page.fill("#filter-value", "goo")
    page.locator("#filter-form button[type=submit]").click()
    page.wait_for_url(re.compile(r"filters=source~goo"))
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    expect(page.locator("#segment-filters .chip")).to_have_count(1)
    expect(page.locator("#segment-filters .chip")).to_contain_text("Source contains goo")
    expected, _ = filtered.summary(r, info, segments.parse("source~goo"), end - timedelta(days=29), end)
    assert card(page, "visitors") == f"{expected['visitors']:,}"
    assert not page.problems, page.problems


def test_a_country_on_the_map_and_a_goal_row_filter_the_page(user_page, live_server, live_stream, r):
    page = user_page
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d")
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)
    page.locator("#panel-locations [data-tab=map]").click()
    page.wait_for_selector("#chart-map[data-links] .main-svg", timeout=15_000)  # (its clicks followed)
    code = page.evaluate(
        "(() => { const el = document.getElementById('chart-map'); const i = 0;"
        " el.emit('plotly_click', {points: [{pointIndex: i, location: el.data[0].locations[i]}]});"
        " return el.data[0].locations[i]; })()"
    )
    page.wait_for_url(re.compile(r"filters=country%3D%3D[A-Z]{2}"))
    assert code and page.locator("#segment-filters .chip").count() == 1
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d")
    goal = page.locator('#goals [data-pane="goals"] table.goals td a').first
    name = goal.inner_text()
    goal.click()
    page.wait_for_url(re.compile(r"filters=goal%3D%3D"))
    expect(page.locator("#segment-filters .chip")).to_contain_text(f"Goal is {name}")
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d")
    page.locator('#goals [data-tab="properties"]').click()  # a custom property's value filters too
    value = page.locator('#goals [data-pane="properties"] td a').first
    plan = value.inner_text()
    value.click()
    page.wait_for_url(re.compile(r"filters=props%3Aplan%3D%3D"))
    expect(page.locator("#segment-filters .chip")).to_contain_text(f"Property plan is {plan}")
    info = SiteInfo.from_model(Site.objects.get(domain="demo.example"))
    end = info.today()
    expected, _ = filtered.summary(r, info, segments.parse(f"props:plan=={plan}"), end - timedelta(days=29), end)
    assert card(page, "visitors") == f"{expected['visitors']:,}" and expected["visitors"] > 0
    assert not page.problems, page.problems
