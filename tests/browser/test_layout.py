"""Every page a person opens, on a phone (390×844) and a laptop (1440×900), in light and in
dark (issue 35, "Finish"): nothing wider than the screen, no word broken in the middle, a
dark page under a dark system, no console error.

The demo site is built once; each viewport and colour scheme gets its own browser context
(the system's scheme is the context's `color_scheme`), which opens the login page logged
out, logs in as staff and walks the rest. Failures are gathered over all four and reported
together, so one run says everything that sticks out. Set TALLY_SCREENSHOTS to a folder to
keep a full-page screenshot of each page (the issue's closing note wants some).
"""

import os
import re
from datetime import date
from pathlib import Path

import pytest

from analytics.models import Exclusion, ImportedLog, ImportJob, Site
from team.models import Alert, AuditEvent, Delivery, Invitation, Report
from team.roles import add_member
from tests.browser.conftest import PASSWORD, USER_AGENT

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1440, "height": 900}}
SCHEMES = ("light", "dark")
DARK_LUMINANCE = 0.2  # a dark page's background is well under this; our light one is 0.94

# (name, path): {site}, {token} and {pk} filled in; the login page is opened logged out.
PAGES = [
    ("login", "/accounts/login/"),
    ("sites", "/"),
    ("site", "/dashboard/{site}/?period=30d"),
    ("filtered", "/dashboard/{site}/?period=30d&filters=source%3D%3DGoogle"),
    ("filter menu open", "/dashboard/{site}/?period=30d&filters=source%3D%3DGoogle&edit=0"),
    ("segments menu open", "/dashboard/{site}/?period=30d&filters=source%3D%3DGoogle&segment_error=1"),
    ("realtime", "/dashboard/{site}/?period=realtime"),
    ("recommendations", "/dashboard/{site}/recommendations/"),
    ("pages", "/dashboard/{site}/pages?period=30d"),
    ("sources", "/dashboard/{site}/details/source?period=30d"),
    ("entry pages", "/dashboard/{site}/details/entry_page?period=30d"),
    ("operating systems", "/dashboard/{site}/details/os?period=30d"),
    ("campaigns", "/dashboard/{site}/details/utm_campaign?period=30d"),
    ("share", "/share/{token}/?period=30d"),
    ("share details", "/share/{token}/details/source?period=30d"),
    ("add site", "/sites/new"),
    ("settings", "/dashboard/{site}/settings/"),
    ("members", "/dashboard/{site}/settings/members"),
    ("email reports", "/dashboard/{site}/settings/reports"),
    ("goals and funnels", "/dashboard/{site}/settings/goals"),
    ("api keys", "/dashboard/{site}/settings/keys"),
    ("alerts", "/dashboard/{site}/settings/alerts"),
    ("share links", "/dashboard/{site}/settings/sharing"),
    ("exclusions", "/dashboard/{site}/settings/exclusions"),
    ("imports", "/dashboard/{site}/settings/imports"),
    ("advanced", "/dashboard/{site}/settings/advanced"),
    ("audit log", "/dashboard/{site}/settings/audit"),
    ("invitation", "/invite/{invite}"),
    ("admin site", "/admin/analytics/site/{pk}/change/"),
    ("admin keys", "/admin/analytics/site/{pk}/keys/"),
    ("admin big keys", "/admin/analytics/site/{pk}/keys/?report=1"),
    ("admin imports", "/admin/analytics/site/{pk}/imports/"),
]

# The words on a page whose lines break inside a word. Paths, URLs, file names, Redis
# keys and long tokens may break anywhere (they would not fit otherwise), and so may code;
# every other word wraps whole, a hyphenated one at its hyphens. A word broken over two
# lines has client rects on two lines.
BROKEN_WORDS = r"""() => {
    const broken = [], range = document.createRange();
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const el = node.parentElement;
        if (!el || el.closest('svg, script, style, code, pre, kbd, samp, .path, [hidden]')) continue;
        if (!el.getClientRects().length) continue;
        for (const token of node.data.matchAll(/\S+/g)) {
            if (token[0].length > 40 || /[\/:@=?&]|\.\w/.test(token[0])) continue;
            for (const part of token[0].matchAll(/[^\-–—]{2,}/g)) {
                range.setStart(node, token.index + part.index);
                range.setEnd(node, token.index + part.index + part[0].length);
                const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.bottom)));
                if (lines.size > 1) broken.push(part[0]);
            }
        }
    }
    return broken;
}"""

# The body's background as a relative luminance (0 black, 1 white), WCAG's formula.
LUMINANCE = """() => {
    const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/[\\d.]+/g).map(Number);
    const linear = c => (c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
}"""


@pytest.fixture
def layout_site(demo, django_user_model):
    """The demo site, shared, with an import and a finished import job (the Imports page's
    tables are not empty), and a staff user."""
    django_user_model.objects.create_superuser("admin", "", PASSWORD)
    site = Site.objects.get(domain="demo.example")
    token = site.enable_sharing()
    name = "plausible-export-demo.example-20240101-20241231-with-a-long-name.zip"
    ImportedLog.objects.create(
        site=site,
        sha256="0" * 64,
        kind="plausible",
        name=name,
        lines=123456,
        imported=1234567,
        first_day=date(2024, 1, 1),
        last_day=date(2024, 12, 31),
    )
    ImportJob.objects.create(
        site=site,
        kind="plausible",
        names=[name],
        status=ImportJob.Status.DONE,
        lines=["imported 366 day(s), 2024-01-01 to 2024-12-31", "1,234,567 pageviews and events"],
    )
    # (each settings page with rows in it: a long address, a webhook, a delivery, a log line)
    ana = django_user_model.objects.create_user("ana.long-name", "ana.with-a-rather-long-address@example.org", PASSWORD)
    add_member(site, ana, "editor")
    Report.objects.create(site=site, email="weekly-reports-for-the-team@example.org", frequency="weekly")
    alert = Alert.objects.create(
        site=site, kind="spike", threshold=100, emails="ops@example.org",
        webhook_url="https://hooks.example.org/tally/alerts/receiver-with-a-long-path",
    )  # fmt: skip
    Delivery.objects.create(alert=alert, channel="webhook", target=alert.webhook_url, body="{}", last_error="HTTP 500")
    Exclusion.objects.create(site=site, kind="ip", value="2001:db8:1234:5678::/64")
    AuditEvent.objects.create(
        site=site, actor_name="admin", action="member.invited", detail="someone@example.org as viewer"
    )
    _, invite = Invitation.create(site, "new-person@example.org", "viewer")
    return {"site": site.domain, "token": token, "pk": site.pk, "invite": invite}


def open_context(browser, viewport, scheme):
    context = browser.new_context(user_agent=USER_AGENT, viewport=VIEWPORTS[viewport], color_scheme=scheme)
    page = context.new_page()
    page.problems = []
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    page.on("response", lambda r: page.problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return context, page


def log_in(page, origin):
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/$"))


def settle(page):
    """Wait until the page is drawn: loaded, and on a dashboard its charts drawn (their
    width is part of the page's)."""
    page.wait_for_load_state("load")
    for chart in ("#chart-visitors", "#chart-minutes"):  # (the site page's, the realtime view's)
        if page.locator(chart).count():
            page.wait_for_selector(f"{chart} .main-svg", timeout=15_000)
            page.wait_for_load_state("networkidle")


def faults(page, scheme) -> list[str]:
    """What is wrong with the page as it is shown: wider than the window, words broken,
    light under a dark system, console errors."""
    found = []
    width, window = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    if width > window:
        found.append(f"{width} px wide in a {window} px window")
    broken = page.evaluate(BROKEN_WORDS)
    if broken:
        found.append(f"words broken mid-word: {sorted(set(broken))[:10]}")
    luminance = page.evaluate(LUMINANCE)
    if scheme == "dark" and luminance > DARK_LUMINANCE:
        found.append(f"a light background ({luminance:.2f}) under a dark system")
    if page.problems:
        found.append(f"console: {page.problems}")
        page.problems.clear()
    return found


def screenshot(page, viewport, scheme, name):
    folder = os.environ.get("TALLY_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{folder}/{name.replace(' ', '-')}-{viewport}-{scheme}.png", full_page=True)


def test_every_page_fits_a_phone_and_a_laptop_in_light_and_dark(browser, live_server, live_stream, layout_site):
    problems = {}
    for viewport in VIEWPORTS:
        for scheme in SCHEMES:
            context, page = open_context(browser, viewport, scheme)
            for name, path in PAGES:
                page.goto(live_server.url + path.format(**layout_site))
                settle(page)
                found = faults(page, scheme)
                if found:
                    problems[(viewport, scheme, name)] = found
                screenshot(page, viewport, scheme, name)
                if name == "login":
                    log_in(page, live_server.url)
            context.close()
    assert problems == {}, "\n".join(f"{key}: {value}" for key, value in problems.items())


def chart_colours(page) -> dict:
    """The visitors chart's font colour and the retention's lightest colour, as drawn, and
    what the theme says they should be now."""
    return page.evaluate(
        """() => ({
        font: document.getElementById('chart-visitors')._fullLayout.font.color,
        low: document.getElementById('chart-retention-day')._fullData[0].colorscale[0][1],
        text: window.tallyTheme.colors().text,
        faint: window.tallyTheme.colors().faint,
    })"""
    )


def recoloured(page):
    """Wait until the visitors chart is drawn in the theme's colours (its font's)."""
    page.wait_for_function(
        """() => { const el = document.getElementById('chart-visitors'), s = document.createElement('span');
        s.style.color = el._fullLayout.font.color; document.body.append(s);
        const drawn = getComputedStyle(s).color; s.remove(); return drawn === window.tallyTheme.colors().text; }""",
        timeout=10_000,
    )


def same_colour(page, a, b) -> bool:
    return page.evaluate(
        """([a, b]) => { const s = document.createElement('span'); document.body.append(s);
        const c = x => { s.style.color = x; return getComputedStyle(s).color; }; const same = c(a) === c(b); s.remove(); return same; }""",
        [a, b],
    )


def test_the_theme_choice_wins_over_the_system_is_kept_and_recolours_the_charts(
    browser, live_server, live_stream, layout_site
):
    context, page = open_context(browser, "laptop", "light")
    page.goto(f"{live_server.url}/accounts/login/")
    log_in(page, live_server.url)
    site = f"{live_server.url}/dashboard/{layout_site['site']}/?period=30d"
    page.goto(site)
    settle(page)
    assert page.evaluate(LUMINANCE) > 0.8
    before = chart_colours(page)
    assert same_colour(page, before["font"], "#1d2430") and same_colour(page, before["low"], "#f1f3ff"), before

    # dark, chosen on a light system: the page, then the drawn charts, with no reload
    page.select_option("select[data-theme-choice]", "dark")
    assert page.evaluate(LUMINANCE) < DARK_LUMINANCE
    recoloured(page)
    dark = chart_colours(page)
    assert same_colour(page, dark["font"], dark["text"]) and same_colour(page, dark["low"], dark["faint"]), dark
    assert not same_colour(page, dark["font"], before["font"]) and not same_colour(page, dark["low"], before["low"])

    # kept: the next page is dark from its head on (theme.js runs before the stylesheet and
    # the body), and so is the admin (Django's own theme switch reads the same choice)
    page.goto(site, wait_until="domcontentloaded")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.evaluate(
        """() => { const s = document.querySelector('head script[src*="theme"]');
        return !!s && !s.defer && !s.async && !!(s.compareDocumentPosition(document.querySelector('link[rel=stylesheet]')) & Node.DOCUMENT_POSITION_FOLLOWING); }"""
    )
    settle(page)
    assert page.input_value("select[data-theme-choice]") == "dark"
    assert page.evaluate(LUMINANCE) < DARK_LUMINANCE
    page.goto(f"{live_server.url}/admin/")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.evaluate(LUMINANCE) < DARK_LUMINANCE

    # back to the system's (light): the charts too
    page.goto(site)
    settle(page)
    page.select_option("select[data-theme-choice]", "auto")
    assert page.evaluate(LUMINANCE) > 0.8
    recoloured(page)
    light = chart_colours(page)
    assert same_colour(page, light["font"], "#1d2430") and same_colour(page, light["low"], "#f1f3ff"), light
    assert page.evaluate("localStorage.getItem('theme')") == "auto"
    assert page.problems == []
    context.close()
