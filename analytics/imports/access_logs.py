"""Access logs (Apache/Nginx "combined", plain or .gz) as `import log` and `import_log`
read them: analytics.ingest.logs parses the lines (pages only, static assets and bots
left out, each line's own time, IP + User-Agent as the visitor). A log is written in time
order, so its lines are counted as they come (Reader.ordered): no sort."""

from collections.abc import Iterator
from pathlib import Path

from ..ingest import logs
from ..ingest.record import Hit
from .replay import Reader, Summary


def read(path: Path, site_host: str, summary: Summary) -> Iterator[Hit]:
    counts = logs.Summary()
    for hit in logs.hits_from_lines(logs.open_lines(path), counts, site_host):
        summary.records = summary.position = counts.lines
        yield hit
    summary.records = summary.position = counts.lines
    summary.skip("static", counts.static)
    summary.skip("bots", counts.bots)
    summary.skip("not_pages", counts.not_pages)
    summary.unparsable, summary.unparsable_lines = counts.unparsable, counts.unparsable_lines


READER = Reader(
    read,
    unit="line",
    reasons=(("static", "static"), ("bots", "bots"), ("not_pages", "not page views")),
    ordered=True,
    custom_events=False,
)
