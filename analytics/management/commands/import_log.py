"""python manage.py import_log --site DOMAIN FILE [FILE ...]

Imports Apache/Nginx combined access logs (plain or .gz) into a site: the same as
`manage.py import log DOMAIN FILE...` (analytics.imports). Each line with its own
timestamp, static assets and bots skipped, through the same engine as the APIs, with a
progress bar. A file already imported (same content) is skipped with a message, so
importing twice changes no number; an import that crashed resumes when run again. Every
file is read to its end before any is counted, so a damaged one stops the import before
it counts anything. Lines of any day from 2000 on count, but those of a day sealed since
its rollup (its raw keys expired: analytics.sites.sealed_days) or later than the batch API
would take (an hour ahead), which are skipped and counted in the summary. The imported
days are rolled up at the end, however old, and their raw keys then expire by the site's
policy (a grace period after the rollup for days it has passed: analytics.rollups.expiry).
"""

from pathlib import Path

from analytics.imports.command import ImportCommand


class Command(ImportCommand):
    help = "Import Apache/Nginx combined access logs (plain or .gz) into a site."

    def add_arguments(self, parser):
        parser.add_argument("--site", required=True, help="the site's domain")
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--no-rollup", action="store_true", help="leave the rollups to the scheduled jobs")

    def handle(self, site, files, no_rollup, **options):
        self.import_files("log", site, files, no_rollup)
