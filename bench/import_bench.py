"""Access-log import speed for a 1,000,000-line combined log, beside the ceiling: merely
reading the file and matching each line's regex."""

import io
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

LINES = 1_000_000
AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.{v} Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_{v} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
]
BOTS = [
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0)",
]


def make_log(path: Path):
    rng = random.Random(5)
    start = datetime.now(UTC) - timedelta(days=30)
    agents = [a.format(v=v) for a in AGENTS for v in range(100, 140)]
    with path.open("w") as f:
        for n in range(LINES):
            moment = start + timedelta(seconds=n * 30 * 86400 // LINES)
            roll = rng.random()
            if roll < 0.4:
                target = f"/static/{rng.choice(('app.js', 'site.css', 'logo.png', 'font.woff2'))}?v={n % 7}"
            else:
                target = f"/articles/{int(3000 ** rng.random())}"
            agent = rng.choice(BOTS) if rng.random() < 0.03 else agents[rng.randrange(len(agents))]
            f.write(
                f"198.51.{rng.randrange(40)}.{rng.randrange(250)} - - [{moment:%d/%b/%Y:%H:%M:%S} +0000] "
                f'"GET {target} HTTP/1.1" 200 {rng.randrange(200, 90000)} "https://example.com/" "{agent}"\n'
            )


def run(site, say) -> list[tuple]:
    from django.core.management import call_command

    from analytics.ingest import logs

    path = Path(__file__).resolve().parent.parent / "var" / "bench" / "access-1m.log"
    if not path.exists():
        say("import bench: writing a 1,000,000-line log (once)")
        make_log(path)
    say("import bench: read-and-parse ceiling")
    start = time.perf_counter()
    matched = sum(1 for line in logs.open_lines(path) if logs.LINE.match(line))
    ceiling = time.perf_counter() - start
    say("import bench: import_log (no rollup)")
    start = time.perf_counter()
    call_command(
        "import_log", "--site", site.domain, "--no-rollup", str(path), stdout=io.StringIO(), stderr=io.StringIO()
    )
    imported = time.perf_counter() - start
    return [
        (
            "Tally import_log (1,000,000 lines: ~57% pages, 40% static, 3% bots)",
            f"{LINES / imported:,.0f}",
            f"{imported / ceiling:.2f}x",
        ),
        ("ceiling: read the file and match each line's regex", f"{matched / ceiling:,.0f}", "1.00x"),
    ]
