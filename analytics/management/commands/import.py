"""python manage.py import {plausible,ga4,umami,log} DOMAIN FILE [FILE ...]

Imports another product's history into a site (analytics.imports). Raw events are
replayed through the same engine as the APIs, so every number is counted as for live
events; Plausible's export, daily totals, becomes the stored rows of the days Tally has
no numbers for:

    plausible  Plausible's CSV export: its zip (or the imported_*.csv files in it)
    ga4     Google Analytics 4's BigQuery export: events_* rows as newline-delimited JSON
    umami   Umami v2: website_event rows with their session's columns, as CSV
    log     Apache/Nginx combined access logs (as `import_log`)

Files may be gzipped. Each file gets a progress bar and a summary line. A file imported
before (same content) is skipped, so importing twice changes no number; an import that
crashed or was killed resumes when run again with the same file, counting every event
once. Events of days sealed since their rollup, before 2000 or over an hour ahead are
skipped and counted; the imported days are rolled up at the end (--no-rollup: not).
"""

from pathlib import Path

from analytics.imports.command import ImportCommand
from analytics.imports.run import KINDS


class Command(ImportCommand):
    help = "Import Plausible's CSV export, a GA4 BigQuery export, an Umami export or access logs into a site."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=KINDS, help="what the files are")
        parser.add_argument("domain", help="the site's domain")
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--no-rollup", action="store_true", help="leave the rollups to the scheduled jobs")

    def handle(self, kind, domain, files, no_rollup, **options):
        self.import_files(kind, domain, files, no_rollup)
