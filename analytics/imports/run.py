"""One import, however it is started: `manage.py import KIND DOMAIN FILE...` (and
`import_log`), or the upload page's job. The files checked, every file read whole before
any is counted, a file imported before (same content, ImportedLog) skipped, each file
counted with a progress bar and a summary line, and the imported days rolled up at the end.

Replayed kinds (GA4, Umami, access logs) go through replay.py; Plausible's CSV export,
daily totals rather than events, through plausible.py.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from django.db import IntegrityError, transaction

from .. import rollups
from ..ingest import logs
from ..models import ImportedLog, Site
from ..sites import SiteInfo
from ..store.connection import get_redis
from . import READERS, plausible, replay

KINDS = ("plausible", *READERS)


class Refused(Exception):
    """Why an import counted nothing (more): a message for the person who started it."""


@dataclass
class Outcome:
    lines: list[str] = field(default_factory=list)  # a summary line per file, and the rollup's
    imports: list[ImportedLog] = field(default_factory=list)
    first: date | None = None  # the local days counted, over every file
    last: date | None = None


def import_files(
    site: Site,
    kind: str,
    files: list[Path],
    *,
    say: Callable[[str], None] = lambda line: None,
    progress=None,
    rollup: bool = True,
    names: list[str] | None = None,
) -> Outcome:
    """Import `files` (shown as `names`, e.g. an upload's own names) into `site`; `say`
    gets each summary line as it is known, `progress` is a stream for the bars."""
    if kind not in KINDS:
        raise Refused(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise Refused(f"no such file: {', '.join(missing)}")
    names = names or [str(f) for f in files]
    outcome = Outcome()

    def said(line: str):
        outcome.lines.append(line)
        say(line)

    if kind == "plausible":
        try:
            log = plausible.import_export(site, files, names, say=said, progress=progress)
        except plausible.Unreadable as e:
            raise Refused(f"{e}; nothing was imported") from None
        if log is not None:
            outcome.imports.append(log)
            outcome.first, outcome.last = log.first_day, log.last_day
        return outcome

    reader = READERS[kind]
    info = SiteInfo.from_model(site)
    r = get_redis()
    try:
        prints = [(path, name, *replay.fingerprint(path, reader)) for path, name in zip(files, names)]
    except logs.Unreadable as e:  # (all read before any is counted)
        raise Refused(f"{e}; nothing was imported") from None
    for path, name, sha, lines in prints:
        if ImportedLog.objects.filter(site=site, sha256=sha).exists():
            said(f"{name}: already imported into {site.domain} (same content); skipped.")
            continue
        summary = replay.Summary()
        try:
            span = replay.replay(r, info, reader, path, sha, lines, summary, progress=progress)
        except logs.Unreadable as e:  # (it read whole a moment ago: it changed since)
            raise Refused(
                f"{e}, after it was checked: did it change during the import? What was counted of it stays "
                "counted; importing the same content again resumes, other content would count twice"
            ) from None
        first, last = span if span is not None else (None, None)
        try:
            with transaction.atomic():
                outcome.imports.append(
                    ImportedLog.objects.create(
                        site=site,
                        sha256=sha,
                        kind=kind,
                        name=name[-500:],
                        lines=summary.records,
                        imported=summary.pageviews + summary.events,
                        first_day=first,
                        last_day=last,
                    )
                )
        except IntegrityError:  # imported concurrently by another run
            pass
        said(replay.describe(Path(name), reader, summary))
        if first is not None and last is not None:
            outcome.first = min(outcome.first or first, first)
            outcome.last = max(outcome.last or last, last)
    if outcome.first is None or outcome.last is None:
        return outcome
    start, end = outcome.first, outcome.last
    if not rollup:
        said(f"Run `manage.py rollup --site {site.domain} --from {start} --to {end}` to roll the imported days up.")
        return outcome
    rolled = rollups.rollup_when_free(r, site, start, end)
    days = f", {rolled.first} to {rolled.last}" if rolled.days else ""  # (a day still to come waits for the beat)
    said(f"Rolled up {rolled.days} day(s){days}.")
    return outcome
