"""The dashboard's first draw in a fresh browser: from navigation to every chart drawn.

Served as `make run` serves it (granian, whitenoise with the collected, compressed static
files), read through the site's share link (no login step in the timing), in Debian's
Chromium driven by Playwright, a new browser context (empty cache) per sample. Two
networks: loopback as it is, and an emulated home connection (20 Mbit/s down, 5 up, 40 ms
round trip: Chrome's network emulation). The reference row is the same page with the full
`plotly.min.js` of the same Plotly version (what the dashboard loaded before its own
bundle, vendor/plotly-tally.min.js), gzipped and served by the same server: the request
for the bundle is redirected to it inside the browser, so it crosses the same emulated
network. A second
reference sends that bundle uncompressed, as the dashboard did before static files were
compressed.
"""

import gzip
import shutil
import statistics
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SAMPLES = 5
HOME = {"offline": False, "latency": 40, "downloadThroughput": 20e6 / 8, "uploadThroughput": 5e6 / 8}
CHARTS = ("visitors", "actives", "retention-day")  # (the top-pages chart became the Pages panel: a list)


def full_bundle(static_root: Path) -> tuple[str, str]:
    """Put plotly.py's own full bundle (same plotly.js version) beside the collected files,
    once with a gzipped twin and once without, and return their URL paths."""
    import plotly

    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    folder = static_root / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, folder / "plotly-full.min.js")
    (folder / "plotly-full.min.js.gz").write_bytes(gzip.compress(source.read_bytes(), 9))
    shutil.copyfile(source, folder / "plotly-raw.min.js")
    return "/static/bench/plotly-full.min.js", "/static/bench/plotly-raw.min.js"


def draw_once(browser, url: str, network: dict | None, bundle: str | None) -> tuple[float, int]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        if network:
            cdp = context.new_cdp_session(page)
            cdp.send("Network.enable")
            cdp.send("Network.emulateNetworkConditions", network)
        if bundle:
            origin = url.split("/share/")[0]
            page.route("**/vendor/plotly-*.js", lambda route: route.continue_(url=origin + bundle))
        received = []
        page.on("response", lambda resp: received.append(resp) if "plotly" in resp.url else None)
        start = time.perf_counter()
        page.goto(url, wait_until="commit")
        for chart in CHARTS:
            page.wait_for_selector(f"#chart-{chart} .main-svg", timeout=60_000)
        elapsed = (time.perf_counter() - start) * 1000
        sent = sum(int(resp.headers.get("content-length") or 0) for resp in received)
        return elapsed, sent
    finally:
        context.close()


def run(base_url: str, token: str, full: tuple[str, str], say) -> list[tuple]:
    if not Path(CHROMIUM).exists():
        say(f"first draw: {CHROMIUM} missing (apt-get install chromium): skipped")
        return []
    from playwright.sync_api import sync_playwright

    url = f"{base_url}/share/{token}/?period=30d"
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            draw_once(browser, url, None, None)  # warm the server's imports and caches
            for network_name, network in (("loopback", None), ("20 Mbit/s, 40 ms", HOME)):
                for bundle_name, bundle in (
                    ("Tally: plotly-tally bundle, gzip", None),
                    ("reference: full plotly.min.js, gzip", full[0]),
                    ("reference: full plotly.min.js, uncompressed", full[1]),
                ):
                    say(f"first draw: {bundle_name}, {network_name}")
                    samples = [draw_once(browser, url, network, bundle) for _ in range(SAMPLES)]
                    ms = statistics.median(s[0] for s in samples)
                    rows.append((f"{bundle_name} ({network_name})", f"{samples[0][1] / 1000:,.0f} KB", f"{ms:,.0f}"))
        finally:
            browser.close()
    return rows
