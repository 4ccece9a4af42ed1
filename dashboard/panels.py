"""The four panels under the charts, as Plausible has them: Sources, Pages, Locations and
Devices, each a card with tabs, each tab a list of a breakdown's top rows with a bar
behind each row, and a Details page listing them all.

A tab lists one *property*: a visit dimension (analytics.queries.breakdown) or "page"
(the top pages). Its rows go to the page as {"name", "count", "bar", "value"}: the label
to show (country names for codes, "(none)" for an empty value), the number the list
ranks by (visitors; visits for exit pages), the bar's width in percent of the top
row's, and the stored value. The first tab of each panel is in the first HTML; the others
come from the breakdown endpoint when their tab is opened.
"""

from dataclasses import dataclass

from analytics import queries, sources
from analytics.countries import COUNTRIES
from analytics.queries import segments

from .templatetags.humanize_tally import metric, thousands

PANEL_ROWS = 10
DETAILS_ROWS = 50
MAP_ROWS = len(COUNTRIES) + 1  # every country (and "(other)", past a day's quota of values)


@dataclass(frozen=True)
class Property:
    key: str  # the dimension, or "page"
    tab: str  # the tab's (or the select's) label
    column: str  # the list's header
    path: bool = False  # values are paths: shown in a monospace font, broken anywhere

    @property
    def metric(self) -> str:
        return "visits" if self.key == "exit_page" else "visitors"


@dataclass(frozen=True)
class Tab:
    key: str
    label: str
    choices: tuple[Property, ...] = ()  # one: a plain tab; more: a select inside the tab


def _tab(key, label, column, path=False):
    return Tab(key, label, (Property(key, label, column, path),))


UTM = Tab(
    "campaigns",
    "Campaigns",
    (
        Property("utm_campaign", "Campaigns", "Campaign"),
        Property("utm_source", "UTM sources", "UTM source"),
        Property("utm_medium", "UTM mediums", "UTM medium"),
        Property("utm_term", "UTM terms", "UTM term"),
        Property("utm_content", "UTM contents", "UTM content"),
    ),
)
PANELS = [
    ("sources", "Sources", (_tab("channel", "Channels", "Channel"), _tab("source", "Sources", "Source"), UTM)),
    (
        "pages",
        "Pages",
        (
            _tab("page", "Top pages", "Page", path=True),
            _tab("entry_page", "Entry pages", "Entry page", path=True),
            _tab("exit_page", "Exit pages", "Exit page", path=True),
        ),
    ),
    (
        "locations",
        "Locations",
        (
            _tab("country", "Countries", "Country"),
            _tab("region", "Regions", "Region"),
            _tab("city", "Cities", "City"),
            Tab("map", "Map"),
        ),
    ),
    (
        "devices",
        "Devices",
        (
            _tab("browser", "Browsers", "Browser"),
            _tab("os", "OS", "Operating system"),
            _tab("device", "Device size", "Device"),
            _tab("screen", "Screen", "Screen size"),
        ),
    ),
]
PROPERTIES = {p.key: p for _, _, tabs in PANELS for tab in tabs for p in tab.choices}
REFERRERS = Property("referrer", "Referrers", "Referrer")
REFERRER_ROWS = 1000  # a filtered audience's referrers looked through for a source's own


def drilled(prop: Property, filters) -> Property:
    """The property a tab lists under these filters: filtered to one source, the Sources
    tab lists that source's referrers (Google: google.com, google.de...), as Plausible
    drills down; any other, itself."""
    return REFERRERS if prop.key == "source" and drilled_source(filters) else prop


def drilled_source(filters) -> str:
    """The one source these filters narrow to ("" for none): its referrers are listed."""
    one = [f.values[0] for f in filters if f.prop == "source" and f.op == "==" and len(f.values) == 1]
    return one[0] if len(one) == 1 else ""


def referrers_of(source: str, rows: list[dict]) -> list[dict]:
    """The referrer rows that are this source's (a filtered audience's visitors also
    came by other referrers: under Tally's filters a person matches for the day)."""
    return [row for row in rows if sources.source_of_host(row["referrer"]) == source]


def label(prop: str, value: str) -> str:
    """What a list shows for a stored value: a country's name for its code. (No flag
    emoji: where no emoji font is installed they are two empty boxes.)"""
    if prop == "country" and value in COUNTRIES:
        return COUNTRIES[value][1]
    return value or "(none)"


def panel_rows(prop: Property, rows: list[dict], view=None) -> list[dict]:
    """The rows a panel list shows, each with its bar (in percent of the top row's) and,
    where the property can filter, the link that adds it to the view's filters."""
    top = max((row[prop.metric] for row in rows), default=0) or 1
    filterable = view is not None and prop.key in segments.PROPERTIES
    return [
        {
            "name": label(prop.key, row[prop.key]),
            "value": row[prop.key],
            "count": row[prop.metric],
            "bar": round(100 * row[prop.metric] / top, 1),
            "href": "?" + view.adding(prop.key, row[prop.key])
            if filterable and row[prop.key] != segments.OTHER
            else "",
            "estimate": row.get("estimate", False),
        }
        for row in rows
    ]


def empty_note(r, info, start, end, prop: Property, found: int, shared: bool = False) -> str:
    """Why a list of `found` rows is empty, where the reason is known ("": no reason to give).
    Regions and cities without a city database: the list is empty because the server does
    not look them up. The API's 409 and the exports' note decide through the same function
    (queries.needs_city_database), so a range whose values were stored while a database was
    set is not explained away (a filter may leave none of them). The remedy is the
    operator's: through a share link the public reads a plain sentence."""
    if queries.needs_city_database(r, info, start, end, prop.key, found):
        return f"No {prop.column.lower()} data for this site." if shared else queries.NO_CITY_DATABASE + "."
    return ""


def fetch(
    r, info, start, end, prop: Property, filters=(), limit: int = PANEL_ROWS, page: int = 1, search: str = "", memo=None
) -> tuple[list[dict], int, bool]:
    """One page of a property's rows, most visitors first, how many there are in all, and
    whether any is estimated (analytics.queries.run). A filtered audience's rows have
    visitors only; exit pages count visits, which filters cannot split: no rows."""
    if filters and prop.key == "exit_page":
        return [], 0, False
    if prop is REFERRERS and drilled_source(filters):  # (the source's own among the audience's referrers)
        query = queries.Query(
            info,
            start,
            end,
            "breakdown",
            filters=tuple(filters),
            dimension="referrer",
            limit=REFERRER_ROWS,
            search=search,
        )
        result = queries.run(r, query, memo)
        rows = referrers_of(drilled_source(filters), result.rows)
        return rows[(page - 1) * limit : page * limit], len(rows), result.estimate
    query = queries.Query(
        info, start, end, "breakdown", filters=tuple(filters), dimension=prop.key, limit=limit, page=page, search=search
    )
    result = queries.run(r, query, memo)
    return result.rows, result.meta["total"], result.estimate


# The Details page's numbers: (field, header, shown on phones too)
COLUMNS = {
    "page": (("visitors", "Visitors", True), ("pageviews", "Pageviews", True)),
    "exit_page": (("visits", "Visits", True),),
}
VISIT_COLUMNS = (
    ("visitors", "Visitors", True),
    ("visits", "Visits", False),
    ("pageviews", "Pageviews", False),
    ("bounce_rate", "Bounce rate", True),
    ("visit_duration", "Visit duration", True),
)


def details_table(prop: Property, rows: list[dict], filtered: bool = False, link=None) -> tuple[list[dict], list[dict]]:
    """The Details page's header and rows: [{"label", "optional"}], [{"name", "cells",
    "href"}] (`link(value)`: the dashboard filtered to a row's value, where it filters).
    A filtered audience's rows have visitors only (analytics.queries.filtered)."""
    linked = link is not None and prop.key in segments.PROPERTIES
    columns = (("visitors", "Visitors", True),) if filtered else COLUMNS.get(prop.key, VISIT_COLUMNS)
    header = [{"label": text, "optional": not always} for _, text, always in columns]
    body = [
        {
            "name": label(prop.key, row[prop.key]),
            "href": link(row[prop.key]) if linked and row[prop.key] != segments.OTHER else "",
            "cells": [
                {
                    "text": thousands(row[key])
                    if key in ("visitors", "visits", "pageviews")
                    else metric(row[key], key),
                    "optional": not always,
                }
                for key, _, always in columns
            ],
        }
        for row in rows
    ]
    return header, body
