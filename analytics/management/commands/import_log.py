"""python manage.py import_log --site DOMAIN FILE [FILE ...]

Imports Apache/Nginx combined access logs (plain or .gz) into a site: each line with its
own timestamp, static assets and bots skipped, through the same engine as the APIs, with
a progress bar. A file already imported (same content) is skipped with a message, so
importing twice changes no number. The imported days are rolled up at the end.
"""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction
from tqdm import tqdm

from analytics import rollups
from analytics.ingest import logs, record
from analytics.models import ImportedLog, Site
from analytics.sites import SiteInfo
from analytics.store.connection import get_redis

BATCH = 10_000


class Command(BaseCommand):
    help = "Import Apache/Nginx combined access logs (plain or .gz) into a site."

    def add_arguments(self, parser):
        parser.add_argument("--site", required=True, help="the site's domain")
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--no-rollup", action="store_true", help="leave the rollups to the scheduled jobs")

    def handle(self, site, files, no_rollup, **options):
        site_obj = Site.objects.filter(domain=site.strip().lower()).first()
        if site_obj is None:
            raise CommandError(f"no site {site!r}; add it with `manage.py addsite {site}`")
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise CommandError(f"no such file: {', '.join(missing)}")
        info = SiteInfo.from_model(site_obj)
        r = get_redis()
        first = last = None
        for path in files:
            sha, total = logs.fingerprint(path)
            if ImportedLog.objects.filter(site=site_obj, sha256=sha).exists():
                self.stdout.write(f"{path}: already imported into {site_obj.domain} (same content); skipped.")
                continue
            summary = logs.Summary()
            with tqdm(total=total, unit="line", unit_scale=True, desc=path.name, file=self.stderr._out) as bar:
                batch = []
                counted = 0
                oldest = info.oldest_day()
                for hit in logs.hits_from_lines(logs.open_lines(path), summary, info.domain):
                    if hit.ts.astimezone(info.tz).date() < oldest:  # (never rolled up: see SiteInfo.oldest_day)
                        summary.imported -= 1
                        summary.too_old += 1
                        continue
                    batch.append(hit)
                    if len(batch) >= BATCH:
                        record(r, info, batch)
                        batch = []
                    if summary.lines - counted >= 5000:
                        bar.update(summary.lines - counted)
                        counted = summary.lines
                if batch:
                    record(r, info, batch)
                bar.update(summary.lines - counted)
            try:
                with transaction.atomic():
                    ImportedLog.objects.create(site=site_obj, sha256=sha, name=str(path)[-500:], lines=summary.lines, imported=summary.imported)
            except IntegrityError:  # imported concurrently by another run
                pass
            self._report(path, summary)
            if summary.first:
                first = min(first or summary.first, summary.first)
                last = max(last or summary.last, summary.last)
        if first is None:
            return
        start, end = first.astimezone(info.tz).date(), last.astimezone(info.tz).date()
        if no_rollup:
            self.stdout.write(f"Run `manage.py rollup --site {site_obj.domain} --from {start} --to {end}` to roll the imported days up.")
            return
        summary = rollups.rollup(r, site_obj, start, end)
        self.stdout.write(f"Rolled up {summary.days} day(s), {start} to {end}.")

    def _report(self, path, s: "logs.Summary"):
        bad = f" (first: line {', '.join(map(str, s.unparsable_lines))})" if s.unparsable_lines else ""
        self.stdout.write(
            f"{path}: {s.lines:,} lines: imported {s.imported:,} pageviews; skipped {s.static:,} static, "
            f"{s.bots:,} bots, {s.not_pages:,} not page views, {s.too_old:,} older than the site keeps; unparsable {s.unparsable:,}{bad}."
        )
