"""python manage.py import_log --site DOMAIN FILE [FILE ...]

Imports Apache/Nginx combined access logs (plain or .gz) into a site: each line with its
own timestamp, static assets and bots skipped, through the same engine as the APIs, with
a progress bar. A file already imported (same content) is skipped with a message, so
importing twice changes no number. Every file is read to its end before any is counted,
so a damaged one stops the import before it counts anything. Lines of any day from 2000
on count, but those of a day sealed since its rollup (its raw keys expired:
analytics.sites.sealed_days) or later than the batch API would take (an hour ahead),
which are skipped and counted in the summary. The imported days are rolled up at the end,
however old, and their raw keys then expire by the site's policy (a grace period after
the rollup for days it has passed: analytics.rollups.expiry).
"""

from datetime import UTC, date, datetime
from pathlib import Path
from typing import cast

from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction
from tqdm import tqdm

from analytics import rollups, sites
from analytics.ingest import logs, record, schemas
from analytics.models import ImportedLog, Site
from analytics.periods import EARLIEST_DAY
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
        try:
            prints = [(path, *logs.fingerprint(path)) for path in files]  # (all read whole before any is counted)
        except logs.Unreadable as e:
            raise CommandError(f"{e}; nothing was imported") from None
        start = end = None  # the first and last local day of the lines counted
        for path, sha, total in prints:
            if ImportedLog.objects.filter(site=site_obj, sha256=sha).exists():
                self.stdout.write(f"{path}: already imported into {site_obj.domain} (same content); skipped.")
                continue
            summary = logs.Summary()
            with tqdm(total=total, unit="line", unit_scale=True, desc=path.name, file=self.stderr._out) as bar:
                batch = []
                counted = 0
                latest = schemas.latest_ts(datetime.now(UTC))
                sealed: dict = {}  # day -> sealed since its rollup (sites.sealed_days): its lines are skipped
                try:
                    for hit in logs.hits_from_lines(logs.open_lines(path), summary, info.domain):
                        ts = cast(datetime, hit.ts)  # (a log line's hit always has its time)
                        day = ts.astimezone(info.tz).date()
                        if ts > latest:  # (as the batch API: its keys would wait without expiry for that day)
                            summary.imported -= 1
                            summary.too_new += 1
                            continue
                        if (
                            ts < schemas.EARLIEST or day < EARLIEST_DAY
                        ):  # (as the batch API: days are numbered from 2000)
                            summary.imported -= 1
                            summary.too_old += 1
                            continue
                        if day not in sealed:
                            sealed[day] = bool(sites.sealed_days(info, [day]))
                        if sealed[day]:
                            summary.imported -= 1
                            summary.sealed += 1
                            continue
                        start, end = min(start or day, day), max(end or day, day)
                        batch.append(hit)
                        if len(batch) >= BATCH:
                            record(r, info, batch)
                            batch = []
                        if summary.lines - counted >= 5000:
                            bar.update(summary.lines - counted)
                            counted = summary.lines
                except logs.Unreadable as e:  # (it read whole a moment ago: it changed since)
                    raise CommandError(
                        f"{e}, after it was checked: did it change during the import? Lines counted from it before "
                        f"line {summary.lines:,} stay counted, and importing it again would count them twice"
                    ) from None
                if batch:
                    record(r, info, batch)
                bar.update(summary.lines - counted)
            try:
                with transaction.atomic():
                    ImportedLog.objects.create(
                        site=site_obj, sha256=sha, name=str(path)[-500:], lines=summary.lines, imported=summary.imported
                    )
            except IntegrityError:  # imported concurrently by another run
                pass
            self._report(path, summary)
        if start is None:
            return
        if no_rollup:
            self.stdout.write(
                f"Run `manage.py rollup --site {site_obj.domain} --from {start} --to {end}` "
                "to roll the imported days up."
            )
            return
        rolled = rollups.rollup_when_free(r, site_obj, start, cast(date, end))  # (set with start)
        days = (
            f", {rolled.first} to {rolled.last}" if rolled.days else ""
        )  # (a day still to come waits for the beat jobs)
        self.stdout.write(f"Rolled up {rolled.days} day(s){days}.")

    def _report(self, path, s: "logs.Summary"):
        bad = f" (first: line {', '.join(map(str, s.unparsable_lines))})" if s.unparsable_lines else ""
        self.stdout.write(
            f"{path}: {s.lines:,} lines: imported {s.imported:,} pageviews; skipped {s.static:,} static, "
            f"{s.bots:,} bots, {s.not_pages:,} not page views, {s.too_old:,} dated before 2000, "
            f"{s.sealed:,} for days sealed (rolled up, raw keys expired), "
            f"{s.too_new:,} dated in the future (over an hour ahead); unparsable {s.unparsable:,}{bad}."
        )
