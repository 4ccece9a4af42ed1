"""Umami (v2) through its data: `website_event` rows joined with their session's columns,
as CSV with a header (plain or .gz), e.g. from PostgreSQL:

    \\copy (SELECT e.*, s.browser, s.os, s.device, s.screen, s.language, s.country,
             s.subdivision1, s.city FROM website_event e JOIN session s USING (session_id)
             WHERE e.website_id = '...') TO 'umami.csv' CSV HEADER

(Umami 2.13 and later call subdivision1 `region`; either is read.) One row is one event:

    created_at                       UTC ("2024-05-01 09:30:00.123+00", ISO 8601)
    event_type 1                     a pageview of url_path (percent-decoded)
    event_type 2                     a custom event named event_name, interactive
    other event types                skipped
    session_id                       the visitor (Umami's own visitor id: identity_source's
                                     `visitor`, stable for that id)
    url_query                        UTM tags (and utm_* columns, where the export has them)
    referrer_domain, _path, _query   the referrer (source, channel)
    browser, os, device              browser (detect-browser's ids: "chrome", "crios", "ios"),
                                     OS ("Windows 10", "Mac OS"), device in Tally's names
    screen                           "1920x1080": the screen bucket of its width
    country, subdivision1, city      country, region ("US-CA"), city

Not mapped: hostname (Tally keeps paths), page titles, languages, and custom events' data
(the event_data table: not in these rows). A row whose browser or OS Umami marked as a
bot ("searchbot") is skipped.
"""

import csv
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

from ..ingest import logs, schemas
from ..ingest.identity import identity_source
from ..ingest.record import PAGEVIEW, Hit
from . import fields
from .countries import country_code
from .replay import Reader, Summary

REQUIRED = ("created_at", "session_id", "url_path", "event_type")
PAGEVIEW_TYPE, CUSTOM_TYPE = "1", "2"
UTM = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")
MAX_NAME = 120


class BadRow(ValueError):
    pass


def _rows(path: Path) -> Iterator[str]:
    return (line + "\n" for line in logs.open_lines(path))  # (csv reads quoted newlines across lines)


def read(path: Path, site_host: str, summary: Summary) -> Iterator[Hit]:
    rows = csv.DictReader(_rows(path))
    while True:
        start = rows.line_num + 1  # (the line the row starts on: a quoted field may span lines)
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error:
            summary.records, summary.position = summary.records + 1, rows.line_num
            summary.bad(start)
            continue
        summary.records, summary.position = summary.records + 1, rows.line_num
        try:
            hit = event(row, site_host, summary)
        except (BadRow, schemas.BadEvent):
            summary.bad(start)
            continue
        if hit is not None:
            yield hit


def check(path: Path):
    """An Umami export's header names the columns REQUIRED."""
    header = next(csv.reader(_rows(path)), [])
    missing = [column for column in REQUIRED if column not in header]
    if missing:
        raise logs.Unreadable(
            f"{path}: not an Umami export (CSV of website_event rows with their session's columns): "
            f"no {', '.join(missing)} column in its header"
        )


def event(row: dict, site_host: str, summary: Summary) -> Hit | None:
    """The Hit of one row; None for a row skipped (counted in `summary`); BadRow (or
    schemas.BadEvent) for one that cannot be read."""
    if None in row or any(row.get(column) is None for column in REQUIRED):
        raise BadRow("not as many fields as the header")
    kind, session = row["event_type"].strip(), row["session_id"].strip()
    if kind not in (PAGEVIEW_TYPE, CUSTOM_TYPE):
        if not kind.isdigit():
            raise BadRow(f"event_type {kind!r}")
        summary.skip("other_types")
        return None
    if not session:
        raise BadRow("no session_id")
    browser, os = fields.known(row.get("browser")), fields.known(row.get("os"))
    if fields.is_bot(browser, os):
        summary.skip("bots")
        return None
    ts = _time(row["created_at"])
    target = row["url_path"].strip() or "/"
    if not target.startswith("/"):
        target = "/" + target
    query = _query(row)
    url = f"https://{site_host or 'localhost'}{target}" + (f"?{query}" if query else "")
    path = schemas.page_path(url.partition("?")[0])
    name = PAGEVIEW
    if kind == CUSTOM_TYPE:
        name = (row.get("event_name") or "").strip()[:MAX_NAME]
        if not name:
            raise BadRow("a custom event without event_name")
        schemas.check_name(name)
    country = country_code(fields.known(row.get("country")))
    attrs = fields.visit_fields(
        site_host,
        url,
        _referrer(row),
        fields.device(browser, None, os, None, row.get("device")),
        fields.location(country, _region(country, row), row.get("city")),
        fields.screen(_width(row.get("screen"))),
    )
    return Hit(ts, path, name, identity_source(None, session, None, None), attrs=attrs)


def _time(text: str) -> datetime:
    try:
        ts = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadRow(f"created_at {text[:40]!r}") from None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def _query(row: dict) -> str:
    """url_query, or the row's utm_* columns (newer Umami versions) when it has no tags."""
    query = (row.get("url_query") or "").strip().lstrip("?")
    if "utm_" in query:
        return query
    tags = [(tag, value) for tag in UTM if (value := fields.known(row.get(tag)))]
    return "&".join(part for part in (query, urlencode(tags)) if part)


def _referrer(row: dict) -> str | None:
    domain = fields.known(row.get("referrer_domain"))
    if domain is None:
        return None
    path = (row.get("referrer_path") or "").strip()
    query = (row.get("referrer_query") or "").strip().lstrip("?")
    if path and not path.startswith("/"):
        path = "/" + path
    return f"https://{domain}{path}" + (f"?{query}" if query else "")


def _region(country: str | None, row: dict) -> str | None:
    """ISO 3166-2, "US-CA": Umami keeps it so (older versions kept "CA" alone)."""
    region = fields.known(row.get("subdivision1") or row.get("region"))
    if region and country and "-" not in region:
        region = f"{country}-{region}"
    return region


def _width(screen: str | None) -> int | None:
    width = (screen or "").partition("x")[0].strip()
    return int(width) if width.isdigit() and len(width) < 7 else None


READER = Reader(
    read,
    unit="row",
    reasons=(("other_types", "of other event types"), ("bots", "bots")),
    check=check,
)
