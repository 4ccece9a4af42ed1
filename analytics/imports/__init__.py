"""Imports: another product's raw events replayed through Tally's own ingest (record()),
so that every number of the imported days (visitors, visits, bounces, sources, pages...)
is counted exactly as for events sent live, and no "imported" table sits beside them.
Plausible's CSV export holds daily totals, not events: they become the stored rows of
the days Tally has no numbers for (plausible.py), as a rollup would have stored them.

    replay.py       the engine, the same for every kind: a file's fingerprint, the events
                    ingest would take, in time order, counted in marked batches (a crashed
                    import, run again, resumes: every event counts once), the summary
    ga4.py          Google Analytics 4: its BigQuery export (events_* rows, NDJSON)
    umami.py        Umami v2: website_event rows with their session's columns (CSV)
    access_logs.py  Apache/Nginx access logs (analytics.ingest.logs parses the lines)
    plausible.py    Plausible's CSV export (a zip of imported_*.csv): daily rows, and their removal
    fields.py       an event's visit fields from the names another product gives
                    (browser, OS, device, country...), in Tally's forms
    countries.py    country names -> ISO codes
    run.py          one import however started (the command, the upload page's job): files
                    checked, ImportedLog, progress, the rollup of the imported days
    command.py      `manage.py import KIND DOMAIN FILE...` (and `import_log`) on run.py

A reader is a function from a file to Hits (replay.Reader); READERS names them for the
command. Adding a kind is a reader and a line here.

Layering: imports use the write side (analytics.ingest, analytics.rollups, analytics.store,
analytics.models, analytics.sites), never the read side (analytics.queries) or the API.
"""

from . import access_logs, ga4, umami
from .replay import Reader

READERS: dict[str, Reader] = {
    "ga4": ga4.READER,
    "umami": umami.READER,
    "log": access_logs.READER,
}

__all__ = ["READERS", "Reader"]
