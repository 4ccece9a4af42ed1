"""Reports: a site's numbers for a period as tables, written as CSV (a zip, one file per
table), Excel (one sheet per table) or JSON. The numbers come from the query runner
(analytics.queries.run), as the read API's and the dashboard's do: the same numbers."""

import csv
import io
import re
import zipfile
from datetime import date, timedelta
from typing import Any

import orjson

from .. import dimensions, queries
from ..sites import SiteInfo

FORMATS = {
    "csv": ("application/zip", "zip"),
    "xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"),
    "json": ("application/json", "json"),
}
TOP_PAGES = 1000
MAX_ROWS = 10_000  # values per dimension in a report
FORMULA_STARTS = ("=", "+", "-", "@", "|", "%", "\t", "\r")
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # (what XML 1.0, so XLSX, cannot hold; tab and newlines stay)
PROPERTY_TABLE = "prop_"  # a custom property's table: prop_ and its name, made safe (table_name)
NAME_LENGTH = 31  # the longest sheet name Excel opens
UNSAFE_IN_NAMES = re.compile(r"[^\w-]|[^\u0000-\uffff]")  # (astral characters count twice in Excel's 31)
NO_CITY_DATABASE_NOTE = f"No rows: no city database on this server. {queries.NO_CITY_DATABASE}."


def build(r, site: SiteInfo, start: date, end: date, progress=lambda share: None, filters=()) -> dict:
    """The report's tables: {name: {"columns": [...], "rows": [[...], ...]}} (and "note":
    why a table is empty, where the rows alone would mislead: city_note), asked of the
    query runner as the read API asks (so they are its numbers). With `filters`, for the
    filtered audience: visitors alone in the breakdowns (the other counts exist per value,
    not per combination), no exit pages or custom properties (their rows count visits or
    events, which no filter narrows: the breakdown API refuses them too), and the report
    says its filters and whether any number in it is estimated."""
    filters, memo = tuple(filters), queries.Memo()
    asked = []

    def ask(kind: str, **kwargs) -> queries.Result:
        result = queries.run(r, queries.Query(site, start, end, kind, filters=filters, **kwargs), memo)
        asked.append(result)
        return result

    daily = ask("timeseries", metrics=queries.METRICS).rows
    totals = ask("aggregate", compare="previous_period").totals
    progress(0.3)
    page_columns = ["visitors"] if filters else ["visitors", "pageviews"]
    pages = ask("breakdown", dimension="page", limit=queries.filtered.MAX_ROWS if filters else TOP_PAGES).rows
    tables = {
        "summary": {
            "columns": ["metric", "value", "change_percent", "estimate"],
            "rows": [
                [metric, result["value"], result.get("change"), result.get("estimate", "")]
                for metric, result in totals.items()
            ],
        },
        "daily": {
            "columns": ["date", *queries.METRICS],
            "rows": [[row["date"], *(row[m] for m in queries.METRICS)] for row in daily],
        },
        "pages": {
            "columns": ["page", *page_columns],
            "rows": [[p["page"], *(p[c] for c in page_columns)] for p in pages],
        },
    }
    progress(0.6)
    if not site.daily_salt:
        for unit, periods in (("day", queries.DAY_PERIODS), ("week", queries.WEEK_PERIODS)):
            cohorts = ask("retention", interval=unit, periods=periods).rows
            tables[f"retention_{unit}"] = {
                "columns": ["cohort", "size", *(f"{unit[0]}{n}" for n in range(periods + 1))],
                "rows": [[c["cohort"], c["size"], *c["retained"]] for c in cohorts],
            }
    progress(0.7)
    for dimension in dimensions.VISIT_DIMENSIONS if filters else dimensions.ALL:
        rows = ask("breakdown", dimension=dimension, limit=queries.filtered.MAX_ROWS if filters else MAX_ROWS).rows
        columns = ["visitors"] if filters else ["visits"] if dimension == dimensions.EXIT else BREAKDOWN_COLUMNS
        tables[dimension] = {
            "columns": [dimension, *columns],
            "rows": [[row[dimension], *(row[c] for c in columns)] for row in rows],
            **city_note(r, site, start, end, dimension, len(rows)),
        }
    goals = ask("breakdown", dimension="goal", limit=MAX_ROWS).rows
    if filters:
        tables["goals"] = {
            "columns": ["goal", "visitors", "conversion_rate"],
            "rows": [[g["goal"], g["visitors"], g["conversion_rate"]] for g in goals],
        }
    else:
        tables["goals"] = {
            "columns": ["goal", "visitors", "events", "conversion_rate", "revenue", "currency"],
            "rows": goal_rows(goals),
        }
        tables.update(property_tables(r, site, start, end))
    progress(0.9)
    report: dict[str, Any] = {"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), "tables": tables}
    if filters:
        report = {
            **report,
            "filters": ";".join(str(f) for f in filters),
            "estimate": any(result.estimate for result in asked),
        }
        report["tables"] = report.pop("tables")  # (the tables last, as before)
    return report


BREAKDOWN_COLUMNS = ["visitors", "visits", "pageviews", "bounce_rate", "visit_duration", "views_per_visit"]


def city_note(r, site: SiteInfo, start: date, end: date, dimension: str, found: int) -> dict:
    """{"note": why} for a region or city table left empty by a server without a city
    database (the breakdown API's 409, decided alike: queries.needs_city_database), else
    {}: an empty table alone would read as "no visitor came from any region or city". The
    note names the setting, never its value (a path on the operator's server)."""
    return {"note": NO_CITY_DATABASE_NOTE} if queries.needs_city_database(r, site, start, end, dimension, found) else {}


def goal_rows(goals: list[dict]) -> list[list]:
    """A row per goal and currency of its revenue (the goal's counts repeated), one with
    neither when it has none: the amount a number apart from its currency, so that a
    spreadsheet can sum it and the formula guard (safe_cell) never turns -5 into text."""
    rows = []
    for g in goals:
        counts = [g["goal"], g["visitors"], g["events"], g["conversion_rate"]]
        rows += [[*counts, amount, currency] for currency, amount in g.get("revenue", {}).items()] or [
            [*counts, None, None]
        ]
    return rows


def property_tables(r, site: SiteInfo, start: date, end: date) -> dict:
    """One table per custom property sent in the period, of any event: the rows of
    GET /api/v1/stats/breakdown?property=event:props:NAME, whose first column is headed by
    the property's full name (its table name may be cut: table_name)."""
    taken: set[str] = set()
    return {
        table_name(prop, taken): {
            "columns": [prop, "visitors", "events"],
            "rows": [[row[prop], row["visitors"], row["events"]] for row in rows],
        }
        for prop, rows in queries.every_property(r, site, start, end, MAX_ROWS).items()
    }


def table_name(prop: str, taken: set[str]) -> str:
    """A custom property's table name, which is also a file name in the CSV zip and an
    Excel sheet name (at most 31 characters, none of / \\ : * ? [ ]): prop_ and the name
    with all but letters, digits, _ and - as _, cut to fit, and numbered (~2, ~3...) when
    it meets a name in `taken` whatever the case (Excel and many file systems ignore it)."""
    base = (PROPERTY_TABLE + UNSAFE_IN_NAMES.sub("_", prop))[:NAME_LENGTH]
    name, n = base, 1
    while name.lower() in taken:
        n += 1
        name = base[: NAME_LENGTH - len(f"~{n}")] + f"~{n}"
    taken.add(name.lower())
    return name


def safe_cell(value):
    """A cell as the public may not write it. Formulas neutralised: paths, referrers and
    property names come from the public, and a cell whose first character other than
    spaces is = + - @ | or % (or a tab or return) would run as a formula, or a DDE link,
    when the file is opened. Control characters out: no spreadsheet may hold them (openpyxl
    refuses the whole file). Numbers are ours and stay numbers (a negative revenue is no
    formula)."""
    if not isinstance(value, str):
        return value
    value = CONTROL.sub("", value)
    return "'" + value if value.lstrip(" ").startswith(FORMULA_STARTS) else value


def cells(table: dict) -> list[list]:
    """A table as CSV and Excel write it: the header, the rows, then its note (if any) as
    a row of its own, its one cell the text (JSON has the note as the table's `note`)."""
    note = [[table["note"]]] if table.get("note") else []
    return [[safe_cell(v) for v in row] for row in (table["columns"], *table["rows"], *note)]


def write(report: dict, fmt: str) -> bytes:
    if fmt == "json":
        return orjson.dumps(report)
    if fmt == "csv":
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, table in report["tables"].items():
                text = io.StringIO()
                writer = csv.writer(text)
                writer.writerows(cells(table))
                archive.writestr(f"{name}.csv", text.getvalue())
        return out.getvalue()
    if fmt == "xlsx":
        from openpyxl import Workbook

        book = Workbook(write_only=True)
        for name, table in report["tables"].items():
            sheet = book.create_sheet(name)
            for row in cells(table):
                sheet.append(row)
        out = io.BytesIO()
        book.save(out)
        return out.getvalue()
    raise ValueError(f"unknown format {fmt}")


def filename(site: SiteInfo, start: date, end: date, fmt: str) -> str:
    return f"tally-{site.domain}-{start.isoformat()}-{end.isoformat()}.{FORMATS[fmt][1]}"


def is_small(start: date, end: date) -> bool:
    """Up to 31 days answers at once; longer ranges run as a background job."""
    return end - start < timedelta(days=31)
