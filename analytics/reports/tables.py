"""Reports: a site's numbers for a period as tables, written as CSV (a zip, one file per
table), Excel (one sheet per table) or JSON. The numbers come from the same query
functions as the read API, so they are the same numbers."""
import csv
import io
import re
import zipfile
from datetime import date, timedelta

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
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PROPERTY_TABLE = "prop_"  # a custom property's table: prop_ and its name, made safe (table_name)
NAME_LENGTH = 31  # the longest sheet name Excel opens
UNSAFE_IN_NAMES = re.compile(r"[^\w-]|[^\u0000-\uffff]")  # (astral characters count twice in Excel's 31)
NO_CITY_DATABASE_NOTE = f"No rows: no city database on this server. {queries.NO_CITY_DATABASE}."


def build(r, site: SiteInfo, start: date, end: date, progress=lambda share: None, filters=()) -> dict:
    """The report's tables: {name: {"columns": [...], "rows": [[...], ...]}} (and "note":
    why a table is empty, where the rows alone would mislead: city_note); with `filters`,
    for the filtered audience (filtered_tables)."""
    if filters:
        return filtered_tables(r, site, start, end, filters, progress)
    daily = queries.timeseries(r, site, start, end, queries.METRICS)
    progress(0.3)
    pages = queries.top_pages(r, site, start, end, limit=TOP_PAGES)
    progress(0.6)
    totals = queries.aggregate(r, site, start, end, compare="previous_period")
    tables = {
        "summary": {
            "columns": ["metric", "value", "change_percent", "estimate"],
            "rows": [[metric, result["value"], result.get("change"), result.get("estimate", "")] for metric, result in totals.items()],
        },
        "daily": {"columns": ["date", *queries.METRICS], "rows": [[row["date"], *(row[m] for m in queries.METRICS)] for row in daily]},
        "pages": {"columns": ["page", "visitors", "pageviews"], "rows": [[p["page"], p["visitors"], p["pageviews"]] for p in pages]},
    }
    if not site.daily_salt:
        for unit, periods in (("day", queries.DAY_PERIODS), ("week", queries.WEEK_PERIODS)):
            cohorts = queries.retention(r, site, unit, start, end, periods)
            tables[f"retention_{unit}"] = {
                "columns": ["cohort", "size", *(f"{unit[0]}{n}" for n in range(periods + 1))],
                "rows": [[c["cohort"], c["size"], *c["retained"]] for c in cohorts],
            }
    progress(0.7)
    tables.update(breakdown_tables(r, site, start, end, totals["visitors"]["value"]))
    progress(0.9)
    return {"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), "tables": tables}


BREAKDOWN_COLUMNS = ["visitors", "visits", "pageviews", "bounce_rate", "visit_duration", "views_per_visit"]


def breakdown_tables(r, site: SiteInfo, start: date, end: date, visitors: int) -> dict:
    """One table per visit dimension (every value, most visitors first), goals, and each
    custom property; the same rows as GET /api/v1/stats/breakdown."""
    tables = {}
    for dimension in dimensions.ALL:
        rows, _ = queries.breakdown(r, site, start, end, dimension, limit=MAX_ROWS)
        columns = ["visits"] if dimension == dimensions.EXIT else BREAKDOWN_COLUMNS
        tables[dimension] = {"columns": [dimension, *columns],
                             "rows": [[row[dimension], *(row[c] for c in columns)] for row in rows],
                             **city_note(r, site, start, end, dimension, len(rows))}
    goals = queries.goals(r, site, start, end, visitors or 0)
    tables["goals"] = {"columns": ["goal", "visitors", "events", "conversion_rate", "revenue", "currency"], "rows": goal_rows(goals)}
    tables.update(property_tables(r, site, start, end))
    return tables


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
        rows += [[*counts, amount, currency] for currency, amount in g.get("revenue", {}).items()] or [[*counts, None, None]]
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


def filtered_tables(r, site: SiteInfo, start: date, end: date, filters, progress=lambda share: None) -> dict:
    """The report of a filtered audience (analytics.queries.filtered): the same tables,
    with visitors alone in the breakdowns (the other counts exist per value, not per
    combination), and the filters and whether any number is estimated in the report.
    Exit pages and custom properties have no table: their rows count visits or events,
    which no filter narrows (the breakdown API refuses them with filters too)."""
    filtered = queries.filtered
    daily, estimate = filtered.timeseries(r, site, filters, start, end, queries.METRICS)
    totals, estimated = filtered.aggregate(r, site, filters, start, end, queries.AGGREGATE_METRICS, compare="previous_period")
    estimate = estimate or estimated
    progress(0.3)
    tables = {
        "summary": {
            "columns": ["metric", "value", "change_percent", "estimate"],
            "rows": [[metric, result["value"], result.get("change"), result.get("estimate", "")] for metric, result in totals.items()],
        },
        "daily": {"columns": ["date", *queries.METRICS], "rows": [[row["date"], *(row[m] for m in queries.METRICS)] for row in daily]},
    }
    candidates = [p["page"] for p in queries.top_pages(r, site, start, end, limit=filtered.MAX_ROWS)]
    rows, estimated = filtered.breakdown(r, site, filters, start, end, "page", candidates)
    estimate = estimate or estimated
    tables["pages"] = {"columns": ["page", "visitors"], "rows": [[row["value"], row["visitors"]] for row in rows]}
    progress(0.5)
    if not site.daily_salt:
        for unit, periods in (("day", queries.DAY_PERIODS), ("week", queries.WEEK_PERIODS)):
            cohorts, estimated = filtered.retention(r, site, filters, unit, start, end, periods)
            estimate = estimate or estimated
            tables[f"retention_{unit}"] = {
                "columns": ["cohort", "size", *(f"{unit[0]}{n}" for n in range(periods + 1))],
                "rows": [[c["cohort"], c["size"], *c["retained"]] for c in cohorts],
            }
    progress(0.7)
    for dimension in dimensions.VISIT_DIMENSIONS:
        values = [row[dimension] for row in queries.breakdown(r, site, start, end, dimension, limit=filtered.MAX_ROWS)[0]]
        rows, estimated = filtered.breakdown(r, site, filters, start, end, dimension, values)
        estimate = estimate or estimated
        tables[dimension] = {"columns": [dimension, "visitors"], "rows": [[row["value"], row["visitors"]] for row in rows],
                             **city_note(r, site, start, end, dimension, len(rows))}
    goals, estimated = filtered.goals(r, site, filters, start, end, totals["visitors"]["value"] or 0)
    tables["goals"] = {"columns": ["goal", "visitors", "conversion_rate"], "rows": [[g["goal"], g["visitors"], g["conversion_rate"]] for g in goals]}
    progress(0.9)
    text = ";".join(str(f) for f in filters)
    return {"site": site.domain, "from": start.isoformat(), "to": end.isoformat(), "filters": text, "estimate": estimate or estimated,
            "tables": tables}


def safe_cell(value):
    """Neutralise spreadsheet formulas: paths, referrers and property names come from the
    public, and a cell starting with = + - @ would run as a formula when the file is
    opened. Numbers are ours and stay numbers (a negative revenue is no formula)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


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
