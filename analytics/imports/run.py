"""What `manage.py import KIND DOMAIN FILE...` and `manage.py import_log --site DOMAIN FILE...`
share: the site and files checked, every file read whole before any is counted, a file
imported before (same content, ImportedLog) skipped, each file replayed (replay.py) with
a progress bar and a summary line, and the imported days rolled up at the end.
"""

from datetime import date
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction

from .. import rollups
from ..ingest import logs
from ..models import ImportedLog, Site
from ..sites import SiteInfo
from ..store.connection import get_redis
from . import READERS, replay


class ImportCommand(BaseCommand):
    def import_files(self, kind: str, domain: str, files: list[Path], no_rollup: bool = False):
        reader = READERS[kind]
        site = Site.objects.filter(domain=domain.strip().lower()).first()
        if site is None:
            raise CommandError(f"no site {domain!r}; add it with `manage.py addsite {domain}`")
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise CommandError(f"no such file: {', '.join(missing)}")
        info = SiteInfo.from_model(site)
        r = get_redis()
        try:
            prints = [(path, *replay.fingerprint(path, reader)) for path in files]  # (all read before any is counted)
        except logs.Unreadable as e:
            raise CommandError(f"{e}; nothing was imported") from None
        start: date | None = None
        end: date | None = None
        for path, sha, lines in prints:
            if ImportedLog.objects.filter(site=site, sha256=sha).exists():
                self.stdout.write(f"{path}: already imported into {site.domain} (same content); skipped.")
                continue
            summary = replay.Summary()
            try:
                span = replay.replay(r, info, reader, path, sha, lines, summary, progress=self.stderr._out)
            except logs.Unreadable as e:  # (it read whole a moment ago: it changed since)
                raise CommandError(
                    f"{e}, after it was checked: did it change during the import? What was counted of it stays "
                    "counted; importing the same content again resumes, other content would count twice"
                ) from None
            try:
                with transaction.atomic():
                    ImportedLog.objects.create(
                        site=site,
                        sha256=sha,
                        kind=kind,
                        name=str(path)[-500:],
                        lines=summary.records,
                        imported=summary.pageviews + summary.events,
                    )
            except IntegrityError:  # imported concurrently by another run
                pass
            self.stdout.write(replay.describe(path, reader, summary))
            if span is not None:
                start, end = min(start or span[0], span[0]), max(end or span[1], span[1])
        if start is None or end is None:
            return
        if no_rollup:
            self.stdout.write(
                f"Run `manage.py rollup --site {site.domain} --from {start} --to {end}` to roll the imported days up."
            )
            return
        rolled = rollups.rollup_when_free(r, site, start, end)
        days = f", {rolled.first} to {rolled.last}" if rolled.days else ""  # (a day still to come waits for the beat)
        self.stdout.write(f"Rolled up {rolled.days} day(s){days}.")
