"""Replaying a file of another product's events through record(), exactly once.

A reader (ga4.py, umami.py, logs.py) turns a file into Hits, each with its own time and
visit fields; this module does the rest, the same for every kind:

    fingerprint  SHA-256 of the content (the file's identity: ImportedLog refuses it twice)
                 and the reader's check of its header, for every file before any is counted
    filter       events before 2000, over an hour ahead, or of a day sealed since its
                 rollup are skipped and counted, as the batch API refuses them
    order        visits are decided event by event in time order (lib/visits.lua), and an
                 export is in no order: the events go through a temporary SQLite file and
                 come back sorted by time, then by their place in the file (bounded memory)
    count        cut into batches of BATCH events, each batch's events of one day in one
                 record() call with a mark: (a key of the file's hash, "batch:day")

Resuming: the batches are cut the same way each time the same file is read (same content,
same order), and a call whose mark is there already counts nothing (Mark: in the same
atomic step as its counts). So a run killed half way and started again replays the
batches the first run counted as no-ops and counts the rest: every event once. The marks
live MARK_TTL; ImportedLog is written only once the whole file is counted.
"""

import itertools
import pickle
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import redis
from tqdm import tqdm

from .. import sites
from ..ingest import logs, schemas
from ..ingest.record import PAGEVIEW, Hit, Mark, idempotency_digest, record
from ..periods import EARLIEST_DAY
from ..sites import SiteInfo
from ..store import keys

BATCH = 10_000  # events a batch: a few record() calls (one per day it spans)
MARK_TTL = 30 * 86400  # a crashed import resumes exactly within a month
COMMON_REASONS = (
    ("too_old", "dated before 2000"),
    ("sealed", "for days sealed (rolled up, raw keys expired)"),
    ("too_new", "dated in the future (over an hour ahead)"),
)


@dataclass
class Summary:
    """What a file held and what became of it. `records` are the reader's units (lines,
    rows, events), `position` the lines read so far (for the progress bar: a CSV row may
    span lines); `calls` the record() calls, `repeated` those a run before had counted."""

    records: int = 0
    position: int = 0
    pageviews: int = 0
    events: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    unparsable: int = 0
    unparsable_lines: list[int] = field(default_factory=list)
    calls: int = 0
    repeated: int = 0

    def skip(self, reason: str, n: int = 1):
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def bad(self, number: int):
        self.unparsable += 1
        if len(self.unparsable_lines) < 5:
            self.unparsable_lines.append(number)


class Reader(NamedTuple):
    """A kind of file. `read(path, site_host, summary)` yields its events as Hits (time
    set, visit fields set, no bots) and counts in `summary` the records it reads, those it
    skips (by reason) and those it cannot parse (by line number); `check(path)` raises
    logs.Unreadable for a file that is not of its kind at all (read before any counting)."""

    read: Callable[[Path, str, Summary], Iterator[Hit]]
    unit: str  # what a record is: "line", "row", "event"
    reasons: tuple[tuple[str, str], ...]  # (reason, how the summary names it), in the summary's order
    check: Callable[[Path], None] | None = None
    ordered: bool = False  # the events come in time order already (an access log): no sort
    custom_events: bool = True  # it may give custom events (the summary counts them)


def fingerprint(path: Path, reader: Reader) -> tuple[str, int]:
    """(SHA-256 of the decompressed content, its lines): the whole file read, so a damaged
    one stops the import before anything is counted (logs.Unreadable)."""
    sha, lines = logs.fingerprint(path)
    if reader.check is not None:
        reader.check(path)
    return sha, lines


def mark_key(site: SiteInfo, sha: str) -> str:
    """The set of a file's applied batches: an idempotency key of the file's content, as a
    client's Idempotency-Key is (record.client_mark), held MARK_TTL."""
    return keys.idempotency(site.id, idempotency_digest(site, f"import:{sha}"))


def replay(
    r: redis.Redis,
    site: SiteInfo,
    reader: Reader,
    path: Path,
    sha: str,
    lines: int,
    summary: Summary,
    progress=None,
) -> tuple[date, date] | None:
    """Count a file's events (see the module's docstring); returns the first and last
    local day counted, None for none. `progress`: a stream for tqdm's bars, or None."""
    span: list[date] = []
    hits = _accepted(reader.read(path, site.domain, summary), site, summary, span)
    key = mark_key(site, sha)
    if reader.ordered:
        with _bar(progress, lines, "line", path.name) as bar:
            _count(r, site, key, _reading(hits, summary, bar), summary, lambda n: None)
    else:
        with tempfile.TemporaryDirectory(prefix="tally-import-") as folder:
            spill = _Spill(Path(folder) / "events.sqlite3")
            try:
                with _bar(progress, lines, "line", f"{path.name}: read") as bar:
                    spill.add(_reading(hits, summary, bar))
                with _bar(progress, spill.count, "event", f"{path.name}: count") as bar:
                    _count(r, site, key, spill.in_time_order(), summary, bar.update)
            finally:
                spill.close()
    return (min(span), max(span)) if span else None


def describe(path: Path, reader: Reader, s: Summary) -> str:
    """The summary line of a file."""
    imported = f"{s.pageviews:,} pageviews" + (f" and {s.events:,} custom events" if reader.custom_events else "")
    skipped = ", ".join(f"{s.skipped.get(reason, 0):,} {label}" for reason, label in (*reader.reasons, *COMMON_REASONS))
    bad = f" (first: line {', '.join(map(str, s.unparsable_lines))})" if s.unparsable_lines else ""
    resumed = (
        f" Resumed: {s.repeated:,} of {s.calls:,} batches had been counted by an earlier run." if s.repeated else ""
    )
    return (
        f"{path}: {s.records:,} {reader.unit}s: imported {imported}; skipped {skipped}; "
        f"unparsable {s.unparsable:,}{bad}.{resumed}"
    )


def _accepted(hits: Iterable[Hit], site: SiteInfo, summary: Summary, span: list[date]) -> Iterator[Hit]:
    """The hits ingest would take (schemas.check_ts; sites.sealed_days), counted; `span`
    gets the first and last local day among them."""
    latest = schemas.latest_ts(datetime.now(UTC))
    sealed: dict[date, bool] = {}
    first = last = None
    for hit in hits:
        ts = hit.ts
        assert ts is not None  # (readers give every event its time)
        if ts > latest:  # (as the batch API: its keys would wait without expiry for that day)
            summary.skip("too_new")
            continue
        day = ts.astimezone(site.tz).date()
        if ts < schemas.EARLIEST or day < EARLIEST_DAY:  # (days are numbered from 2000)
            summary.skip("too_old")
            continue
        if day not in sealed:
            sealed[day] = bool(sites.refused_days(site, [day]))
        if sealed[day]:
            summary.skip("sealed")
            continue
        first, last = min(first or day, day), max(last or day, day)
        if hit.name == PAGEVIEW:
            summary.pageviews += 1
        else:
            summary.events += 1
        yield hit
    if first is not None and last is not None:
        span += [first, last]


def _count(
    r: redis.Redis,
    site: SiteInfo,
    key: str,
    hits: Iterable[Hit],
    summary: Summary,
    done: Callable[[int], object],
):
    """record() batch by batch, a call per day of a batch, each with its mark ("n:day": a
    day whose events are all skipped on a later run shifts no other call's mark)."""
    tz = site.tz
    iterator = iter(hits)
    for n in itertools.count():
        batch = list(itertools.islice(iterator, BATCH))
        if not batch:
            return
        by_day: dict[date, list[Hit]] = {}
        for hit in batch:
            by_day.setdefault(hit.ts.astimezone(tz).date(), []).append(hit)  # type: ignore[union-attr]
        for day, day_hits in by_day.items():
            recorded = record(r, site, day_hits, mark=Mark(key, f"{n}:{day.isoformat()}", MARK_TTL))
            summary.calls += 1
            summary.repeated += recorded.repeated
        done(len(batch))


def _reading(hits: Iterable[Hit], summary: Summary, bar) -> Iterator[Hit]:
    """The hits, moving the bar by the lines read (every few thousand)."""
    shown = 0
    for hit in hits:
        yield hit
        if summary.position - shown >= 5000:
            bar.update(summary.position - shown)
            shown = summary.position
    bar.update(summary.position - shown)


def _bar(stream, total: int, unit: str, name: str) -> tqdm:
    return tqdm(total=total, unit=unit, unit_scale=True, desc=name, file=stream, disable=stream is None)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class _Spill:
    """Hits in a temporary SQLite file, read back sorted by time, then by their place in
    the file: SQLite sorts what does not fit in memory in temporary files of its own. The
    hits are pickled (a file this process wrote a moment ago, in its own directory)."""

    def __init__(self, path: Path):
        self.db = sqlite3.connect(path)
        self.db.execute("PRAGMA journal_mode = OFF")
        self.db.execute("PRAGMA synchronous = OFF")
        self.db.execute("CREATE TABLE hits (ts INTEGER NOT NULL, seq INTEGER NOT NULL, hit BLOB NOT NULL)")
        self.count = 0

    def add(self, hits: Iterable[Hit]):
        def rows():
            for hit in hits:
                self.count += 1
                yield (hit.ts - _EPOCH) // _MICROSECOND, self.count, pickle.dumps(hit, pickle.HIGHEST_PROTOCOL)  # type: ignore[operator]

        with self.db:
            self.db.executemany("INSERT INTO hits VALUES (?, ?, ?)", rows())

    def in_time_order(self) -> Iterator[Hit]:
        for (blob,) in self.db.execute("SELECT hit FROM hits ORDER BY ts, seq"):
            yield pickle.loads(blob)

    def close(self):
        self.db.close()
