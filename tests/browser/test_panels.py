"""The breakdown panels in a real browser (issue 12): over the demo site, on a laptop
(1440 px) and a phone (390 px), the four panels list rows, every tab shows its list, the
world map draws from the vendored outlines with no request leaving our servers, no
console error, nothing wider than the screen."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PANELS = ("sources", "pages", "locations", "devices")


def overflow(page) -> int:
    return page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")


def rows(pane) -> list[str]:
    return pane.locator("ol.rows li:not(.empty) .name").all_inner_texts()


@pytest.mark.parametrize("width", [1440, 390])
def test_every_panel_tab_lists_its_rows_and_the_map_is_drawn_locally(
    user_page, live_server, live_stream, width, settings
):
    settings.GEO_CITY_DB = ""
    page = user_page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=30d")
    page.wait_for_selector("#chart-visitors .main-svg", timeout=15_000)

    # the first tab of each panel came with the page, with rows
    for panel in PANELS:
        assert len(rows(page.locator(f"#panel-{panel} [data-pane]:not([hidden])"))) > 0, panel
    assert "Organic Search" in rows(page.locator("#panel-sources [data-pane=channel]"))
    assert "Chrome" in rows(page.locator("#panel-devices [data-pane=browser]"))
    assert "United States" in rows(page.locator("#panel-locations [data-pane=country]"))

    # every tab shows its list (regions and cities need a city database: none here)
    empty = {"region", "city"}
    for panel in PANELS:
        for tab in page.locator(f"#panel-{panel} [data-tab]").all():
            key = tab.get_attribute("data-tab")
            tab.click()
            pane = page.locator(f"#panel-{panel} [data-pane={key}]")
            expect(pane).to_be_visible()
            expect(tab).to_have_attribute("aria-selected", "true")
            if key == "map":
                continue
            expect(pane.locator(".list[data-loaded]")).to_have_count(1)
            if key in empty:  # they say why
                expect(pane.locator("ol.rows li.empty")).to_have_text(
                    re.compile(r"^Regions and cities need a city database: set TALLY_GEO_CITY_DB")
                )
            else:
                assert len(rows(pane)) > 0, (panel, key)
                assert pane.locator("a[data-details]").is_visible()
            assert overflow(page) <= 0, (panel, key, overflow(page))

    # the Campaigns tab's select lists the other UTM tags
    page.click("#panel-sources [data-tab=campaigns]")
    campaigns = page.locator("#panel-sources [data-pane=campaigns]")
    assert set(rows(campaigns)) == {"november-update", "self-hosted-analytics"}
    campaigns.locator("select").select_option("utm_medium")
    expect(campaigns.locator("ol.rows li .name")).to_have_text(["email", "cpc"], timeout=10_000)
    assert "/details/utm_medium?" in campaigns.locator("a[data-details]").get_attribute("href")

    # the map: drawn from the vendored outlines, countries filled
    page.click("#panel-locations [data-tab=map]")
    page.wait_for_selector("#chart-map .choroplethlayer path", timeout=15_000)
    filled = page.locator("#chart-map .choroplethlayer path").count()
    assert filled >= 15, filled  # the demo's countries that are big enough for a 1:110m map
    assert any(url.endswith("/vendor/topojson/world_110m.json") for url in page.requested)

    assert overflow(page) <= 0, overflow(page)
    ours = (live_server.url, f"http://localhost:{live_stream}", f"http://127.0.0.1:{live_stream}")
    assert [url for url in page.requested if not url.startswith(ours)] == []
    assert page.problems == []


def test_details_lists_every_value_and_searches(user_page, live_server):
    page = user_page
    page.goto(f"{live_server.url}/dashboard/demo.example/?period=90d")
    page.click("#panel-sources [data-tab=source]")
    details = page.locator("#panel-sources [data-pane=source] a[data-details]")
    expect(details).to_be_visible()
    details.click()
    page.wait_for_url(re.compile(r"/details/source\?period=90d"))
    assert page.inner_text("h1") == "Sources"
    names = page.locator("table.details td.name").all_inner_texts()
    assert "Google" in names and "Direct / None" in names
    page.fill("input[type=search]", "hacker")
    page.click("form.page-search-form button")
    expect(page.locator("table.details td.name")).to_have_text(["Hacker News"])
    assert page.problems == []
