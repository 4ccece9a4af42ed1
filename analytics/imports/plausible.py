"""Plausible's CSV export (Site settings > Imports & exports > Export data): daily totals,
stored as the rows of the days Tally has no numbers of its own for.

The export is a zip of CSV files named `imported_<table>_<first>_<last>.csv` (the names
without `imported_` too), one per table, with Plausible's columns (its
`Plausible.Imported.CSVImporter`; older exports lack a few, which count as 0). Unlike GA4's
and Umami's exports these are not events, so nothing is replayed: each day's totals
become the rows a rollup stores for a day (DailyMetrics, DimensionDaily, PageDaily,
EventDaily, pointing at the import through DailyMetrics.imported), and every reader that
answers from stored rows answers from them: the dashboard, the APIs, the exports.

What the totals cannot say, they do not pretend (Plausible states the same caveats):

- one person on two days: visitors over several imported days are the days' summed
  (queries mark them as such), new visitors are unknown (None), DAU is the day's visitors;
- combinations a table does not hold: a filter over imported days is estimated from one
  table at a time, as for any day whose raw keys expired (queries/stored.py);
- cities, named by GeoNames id in the export, and hours: not imported.

A day Tally counted itself (a stored row with visitors, or raw keys) is kept and the
export's numbers for it are skipped: imported history fills the days before Tally, it
never adds to them. A day an earlier Plausible import filled is taken by the later one.
The whole export is written in one database transaction with its ImportedLog: a run that
crashed wrote nothing, and the same export again is refused as imported already.
"""

import csv
import hashlib
import io
import re
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path, PurePosixPath

from django.db import transaction
from django.db.models import Q
from tqdm import tqdm

from .. import sources
from ..dimensions import DIRECT, EXIT, TOTAL, split
from ..models import DailyMetrics, DimensionDaily, EventDaily, ImportedLog, PageDaily, Site
from ..periods import EARLIEST_DAY
from ..store import keys
from ..store.connection import get_redis
from . import fields

KIND = "plausible"
# Each table's columns this importer reads: (required, optional). Optional ones are newer
# than some exports (pageviews of the visit tables, scroll depth...) and count as 0.
_VISIT = ("visitors", "visits", "visit_duration", "bounces")
COLUMNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "visitors": (("visitors", "pageviews", "bounces", "visits", "visit_duration"), ()),
    "sources": (
        ("source", *_VISIT),
        ("referrer", "utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term", "pageviews"),
    ),
    "pages": (("page", "visitors", "pageviews"), ("hostname", "visits")),
    "entry_pages": (("entry_page", "visitors", "entrances", "visit_duration", "bounces"), ("pageviews",)),
    "exit_pages": (("exit_page", "visitors", "exits"), ("visit_duration", "bounces", "pageviews")),
    "locations": (("country", *_VISIT), ("region", "city", "pageviews")),
    "devices": (("device", *_VISIT), ("pageviews",)),
    "browsers": (("browser", *_VISIT), ("browser_version", "pageviews")),
    "operating_systems": (("operating_system", *_VISIT), ("operating_system_version", "pageviews")),
    "custom_events": (("name", "visitors", "events"), ("link_url", "path")),
}
_NAME = re.compile(rf"^(?:imported_)?({'|'.join(COLUMNS)})_(\d{{8}})_(\d{{8}})\.csv$")
_TEXT_COLUMNS = {
    "source",
    "referrer",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_content",
    "utm_term",
    "page",
    "hostname",
    "entry_page",
    "exit_page",
    "country",
    "region",
    "city",
    "device",
    "browser",
    "browser_version",
    "operating_system",
    "operating_system_version",
    "name",
    "link_url",
    "path",
}
MAX_FILE_BYTES = 2 << 30  # a zip member's size, read whole: past it the export is refused, not read


class Unreadable(Exception):
    """An export that is not one: a file or member name, a missing column, a bad number;
    one line naming where."""


@dataclass
class Export:
    sha256: str
    tables: dict[str, list[dict]] = field(default_factory=dict)  # table -> rows ({column: str | int, "date": date})
    files: int = 0


def read_export(files: list[Path], names: list[str]) -> Export:
    """Every table of the export (zips and loose CSV files alike), read whole and checked."""
    contents: list[tuple[str, str, bytes]] = []  # (table, where, content)
    for path, name in zip(files, names):
        if zipfile.is_zipfile(path):
            try:
                with zipfile.ZipFile(path) as archive:
                    for member in archive.infolist():
                        base = PurePosixPath(member.filename).name
                        if member.is_dir() or member.filename.startswith("__MACOSX/") or not base.endswith(".csv"):
                            continue
                        if member.file_size > MAX_FILE_BYTES:
                            raise Unreadable(f"{name}: {base} is over {MAX_FILE_BYTES >> 30} GB")
                        contents.append((_table(base, f"{name}: {base}"), f"{name}: {base}", archive.read(member)))
            except (zipfile.BadZipFile, OSError, EOFError) as e:
                raise Unreadable(f"{name}: a damaged zip ({e})") from None
        else:
            where = Path(name).name
            try:
                contents.append((_table(Path(name).name, where), where, path.read_bytes()))
            except OSError as e:
                raise Unreadable(f"{name}: {e.strerror or e}") from None
    if not contents:
        raise Unreadable("no CSV files of Plausible's export (imported_visitors_YYYYMMDD_YYYYMMDD.csv...) found")
    export = Export(sha256="", files=len(contents))
    digest = hashlib.sha256(b"plausible-csv\0")
    for table, where, content in sorted(contents, key=lambda c: (c[0], hashlib.sha256(c[2]).digest())):
        digest.update(f"{table}\0".encode() + hashlib.sha256(content).digest())
        export.tables.setdefault(table, []).extend(_rows(table, where, content))
    if "visitors" not in export.tables:
        raise Unreadable("the export has no imported_visitors_*.csv (its daily totals): was a file left out?")
    export.sha256 = digest.hexdigest()
    return export


def _table(base: str, where: str) -> str:
    match = _NAME.match(base)
    if match is None:
        raise Unreadable(
            f"{where}: not a file of Plausible's export (imported_<table>_YYYYMMDD_YYYYMMDD.csv, "
            f"the tables {', '.join(COLUMNS)})"
        )
    return match[1]


def _rows(table: str, where: str, content: bytes) -> Iterator[dict]:
    required, optional = COLUMNS[table]
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise Unreadable(f"{where}: not UTF-8 text (byte {e.start})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = set(reader.fieldnames or ())
    missing = [c for c in ("date", *required) if c not in header]
    if missing:
        raise Unreadable(f"{where}: no column {', '.join(missing)} (its columns: {', '.join(reader.fieldnames or ())})")
    for row in reader:
        line = reader.line_num
        try:
            day = date.fromisoformat((row["date"] or "").strip())
        except ValueError:
            raise Unreadable(f"{where}, line {line}: date {row['date']!r} is not YYYY-MM-DD") from None
        if not EARLIEST_DAY <= day <= date(2100, 1, 1):
            raise Unreadable(f"{where}, line {line}: date {day} is out of range")
        parsed: dict = {"date": day}
        for column in (*required, *optional):
            value = (row.get(column) or "").strip()
            if column in _TEXT_COLUMNS:
                parsed[column] = fields.known(value) or ""
            elif not value or value.lower() == "null":
                parsed[column] = 0
            elif value.isdigit():
                parsed[column] = int(value)
            else:
                raise Unreadable(f"{where}, line {line}: {column} {value!r} is not a whole number")
        yield parsed


_COUNTS = ("visitors", "pageviews", "visits", "bounces", "duration")


@dataclass
class _Day:
    """One day's rows, as the rollup would store them."""

    totals: dict = field(default_factory=dict)
    values: dict = field(default_factory=lambda: defaultdict(lambda: dict.fromkeys(_COUNTS, 0)))  # (dim, value)
    pages: dict = field(default_factory=lambda: defaultdict(lambda: [0, 0]))  # path -> [visitors, pageviews]
    events: dict = field(default_factory=lambda: defaultdict(lambda: [0, 0]))  # (name, prop, value) -> [vis, events]


def _days(export: Export) -> dict[date, _Day]:
    days: dict[date, _Day] = defaultdict(_Day)
    for row in export.tables["visitors"]:
        t = days[row["date"]].totals
        for column in ("visitors", "pageviews", "visits", "bounces", "visit_duration"):
            t[column] = t.get(column, 0) + row[column]

    def add(day: date, dimension: str, value: str, row: dict, visits: str = "visits", duration="visit_duration"):
        if not value:
            return
        counts = days[day].values[dimension, value[:1024]]
        counts["visitors"] += row["visitors"]
        counts["pageviews"] += row.get("pageviews", 0)
        counts["visits"] += row.get(visits, 0)
        counts["bounces"] += row.get("bounces", 0)
        counts["duration"] += row.get(duration, 0)

    for row in export.tables.get("sources", ()):
        source = row["source"] or DIRECT
        add(row["date"], "source", source, row)
        add(row["date"], "referrer", _referrer_host(row["referrer"]) if source != DIRECT else DIRECT, row)
        add(row["date"], "channel", sources.channel_of(source, row["utm_source"], row["utm_medium"]), row)
        for tag in ("utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term"):
            add(row["date"], tag, row[tag], row)
    for row in export.tables.get("entry_pages", ()):
        add(row["date"], "entry_page", row["entry_page"], row, visits="entrances")
    for row in export.tables.get("exit_pages", ()):
        add(row["date"], EXIT, row["exit_page"], row, visits="exits")
    for row in export.tables.get("locations", ()):
        add(row["date"], "country", row["country"].upper(), row)
        add(row["date"], "region", row["region"].upper() if "-" in row["region"] else "", row)
    for row in export.tables.get("devices", ()):
        add(row["date"], "device", fields.DEVICES.get(row["device"].lower(), row["device"]), row)
    for row in export.tables.get("browsers", ()):
        device = fields.device(row["browser"] or None, row["browser_version"] or None, None, None, None)
        if device is not None:
            add(row["date"], "browser", device.browser, row)
            add(row["date"], "browser_version", f"{device.browser} {device.browser_version}", row)
    for row in export.tables.get("operating_systems", ()):
        device = fields.device(
            None, None, row["operating_system"] or None, row["operating_system_version"] or None, None
        )
        if device is not None:
            add(row["date"], "os", device.os, row)
            add(row["date"], "os_version", f"{device.os} {device.os_version}", row)
    for row in export.tables.get("pages", ()):
        if row["page"]:
            page = days[row["date"]].pages[row["page"][:1024]]
            page[0] += row["visitors"]
            page[1] += row["pageviews"]
    for row in export.tables.get("custom_events", ()):
        if not row["name"]:
            continue
        for prop, value in (("", ""), ("url", row["link_url"]), ("path", row["path"])):
            if prop and not value:
                continue
            counts = days[row["date"]].events[row["name"][:255], prop, value]
            counts[0] += row["visitors"]
            counts[1] += row["events"]
    return days


def _referrer_host(referrer: str) -> str:
    """Plausible's referrer ("news.ycombinator.com/item", or a URL) as Tally's referrer
    dimension names it: the host."""
    rest = referrer.split("://", 1)[-1]
    host = rest.split("/", 1)[0].split("?", 1)[0].lower()
    return host.removeprefix("www.") if host else DIRECT


def counted_days(site: Site, days: list[date]) -> set[date]:
    """Which of these days Tally has numbers of its own for: a stored row with visitors or
    pageviews that no Plausible import wrote, or raw keys in Redis."""
    own = set(
        DailyMetrics.objects.filter(site=site, date__in=days, imported__isnull=True)
        .filter(Q(visitors__gt=0) | Q(pageviews__gt=0))
        .values_list("date", flat=True)
    )
    r = get_redis()
    pipe = r.pipeline(transaction=False)
    rest = [day for day in days if day not in own]
    for day in rest:
        pipe.exists(keys.active(site.pk, day), keys.pageviews(site.pk, day), keys.site_visitors(site.pk, day))
    return own | {day for day, n in zip(rest, pipe.execute()) if n}


def import_export(
    site: Site, files: list[Path], names: list[str], *, say: Callable[[str], None], progress=None
) -> ImportedLog | None:
    """Import one export (its files: a zip, or the CSV files); None when it was imported
    before or holds no day Tally lacks."""
    export = read_export(files, names)
    label = names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more"
    if ImportedLog.objects.filter(site=site, sha256=export.sha256).exists():
        say(f"{label}: already imported into {site.domain} (same content); skipped.")
        return None
    every = _days(export)
    dated = sorted(every)
    own = counted_days(site, dated)
    days = [day for day in dated if day not in own and every[day].totals]
    orphans = sum(1 for day in dated if not every[day].totals)  # (rows of a day the totals lack)
    if not days:
        say(f"{label}: no day to import: Tally has its own numbers for all {len(dated):,} day(s) of the export.")
        return None
    now = datetime.now(UTC)
    rows = sum(1 + len(every[d].values) + len(every[d].pages) + len(every[d].events) for d in days)
    with (
        transaction.atomic(),
        tqdm(
            total=rows, unit="row", desc=label[-40:], file=progress, disable=progress is None, dynamic_ncols=True
        ) as bar,
    ):
        log = ImportedLog.objects.create(
            site=site,
            sha256=export.sha256,
            kind=KIND,
            name=label[-500:],
            lines=sum(len(t) for t in export.tables.values()),
            imported=sum(every[d].totals["pageviews"] for d in days),
            first_day=days[0],
            last_day=days[-1],
        )
        earlier = set(
            DailyMetrics.objects.filter(site=site, date__in=days, imported__isnull=False).values_list(
                "imported_id", flat=True
            )
        )
        for model in (DailyMetrics, DimensionDaily, PageDaily, EventDaily):
            for start in range(0, len(days), 500):
                model.objects.filter(site=site, date__in=days[start : start + 500]).delete()
        for start in range(0, len(days), 100):
            _write(site, log, every, days[start : start + 100], now, bar)
        _shrink(earlier)
    visitors = sum(every[d].totals["visitors"] for d in days)
    pageviews = sum(every[d].totals["pageviews"] for d in days)
    kept = f"; kept Tally's own numbers for {len(own):,} day(s) it counted" if own else ""
    lacking = f"; {orphans:,} day(s) without daily totals skipped" if orphans else ""
    say(
        f"{label}: {export.files} CSV file(s): imported {len(days):,} day(s), {days[0]} to {days[-1]} "
        f"({visitors:,} daily visitors, {pageviews:,} pageviews){kept}{lacking}."
    )
    return log


def _write(site: Site, log: ImportedLog, every: dict[date, _Day], days: list[date], now: datetime, bar):
    metrics: list[DailyMetrics] = []
    values: list[DimensionDaily] = []
    pages: list[PageDaily] = []
    events: list[EventDaily] = []
    for day in days:
        d = every[day]
        t = d.totals
        metrics.append(
            DailyMetrics(
                site=site,
                date=day,
                visitors=t["visitors"],
                pageviews=t["pageviews"],
                dau=t["visitors"],
                new_visitors=None,
                final=True,
                keys_until=now,
                page_keys_until=now,
                segment_keys_until=now,
                imported=log,
            )
        )
        total_dimension, total_value = split(TOTAL)
        values.append(
            DimensionDaily(
                site=site,
                date=day,
                dimension=total_dimension,
                value=total_value,
                visitors=t["visitors"],
                pageviews=t["pageviews"],
                visits=t["visits"],
                bounces=t["bounces"],
                duration=t["visit_duration"],
            )
        )
        values.extend(
            DimensionDaily(site=site, date=day, dimension=dimension, value=value, **counts)
            for (dimension, value), counts in d.values.items()
        )
        pages.extend(
            PageDaily(site=site, date=day, path=path, visitors=min(v, views) if views else v, pageviews=views)
            for path, (v, views) in d.pages.items()
        )
        events.extend(EventDaily.of(site, day, group, v, n) for group, (v, n) in d.events.items())
    DailyMetrics.objects.bulk_create(metrics, batch_size=500)
    DimensionDaily.objects.bulk_create(values, batch_size=500)
    PageDaily.objects.bulk_create(pages, batch_size=500)
    EventDaily.objects.bulk_create(events, batch_size=500)
    bar.update(len(metrics) + len(values) + len(pages) + len(events))


def _shrink(logs: set[int]):
    """Earlier Plausible imports some of whose days a later one took: their date range
    shrinks to the days they keep; one left with none goes."""
    for log in ImportedLog.objects.filter(pk__in=logs):
        kept = DailyMetrics.objects.filter(imported=log).order_by("date").values_list("date", flat=True)
        if not kept:
            log.delete()
        else:
            log.first_day, log.last_day = kept.first(), kept.last()
            log.save(update_fields=["first_day", "last_day"])


def remove(log: ImportedLog) -> int:
    """Take a Plausible import out: its days' rows go (those days had no numbers of
    Tally's own: see counted_days()), and the log. Returns the days removed."""
    with transaction.atomic():
        days = list(DailyMetrics.objects.filter(imported=log).values_list("date", flat=True))
        for model in (DimensionDaily, PageDaily, EventDaily, DailyMetrics):
            for start in range(0, len(days), 500):
                model.objects.filter(site_id=log.site_id, date__in=days[start : start + 500]).delete()
        log.delete()
    return len(days)
