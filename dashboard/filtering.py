"""The dashboard's filters: `?filters=source==Google;country==DE` in the URL (the read
API's syntax, analytics.queries.segments), shown as chips that each remove themselves,
added by clicking a row of any panel. Everything here builds links: the URL is the state,
so a reload, a bookmark or a shared link shows the same filtered view."""

from dataclasses import dataclass, replace
from urllib.parse import urlencode

from analytics.countries import COUNTRIES
from analytics.queries import segments

from .panels import label

COMPARISONS = (("previous_period", "Previous period"), ("year", "Same dates last year"))
NAMES = {name.lower(): code for code, (_, name) in COUNTRIES.items()}


@dataclass(frozen=True)
class View:
    """A period, filters and what the cards compare with: what every number of the page is for."""

    period_query: str
    filters: tuple = ()
    error: str = ""
    compare: str = COMPARISONS[0][0]
    interval: str = ""  # the main chart's, when chosen (dashboard/chart_choice.py)
    metric: str = ""  # the main chart's, when not visitors
    locked: tuple = ()  # filters a segment's share link forces: their chips offer no removal

    @property
    def text(self) -> str:
        return ";".join(str(f) for f in self.filters)

    def query(self, filters=None) -> str:
        """The query string of this view, or of the same period with other filters."""
        filters = self.filters if filters is None else filters
        extra = {}
        if filters:
            extra["filters"] = ";".join(str(f) for f in filters)
        if self.compare != COMPARISONS[0][0]:
            extra["compare"] = self.compare
        if self.interval:
            extra["interval"] = self.interval
        if self.metric:
            extra["metric"] = self.metric
        return f"{self.period_query}&{urlencode(extra)}" if extra else self.period_query

    def with_period(self, period_query: str) -> "View":
        """This view over another period (the chart's interval back to that period's own)."""
        return replace(self, period_query=period_query, interval="")

    def charting(self, interval: str | None = None, metric: str | None = None) -> str:
        """The query string of this view with the chart by another interval or metric."""
        return replace(
            self,
            interval=self.interval if interval is None else interval,
            metric=self.metric if metric is None else metric,
        ).query()

    def comparing(self, compare: str) -> str:
        """The query string of this view compared with something else."""
        return replace(self, compare=compare).query()

    @property
    def compare_label(self) -> str:
        return "last year" if self.compare == "year" else "previous period"

    @property
    def compare_choices(self) -> list[dict]:
        return [
            {"key": key, "label": label, "href": "?" + self.comparing(key), "active": key == self.compare}
            for key, label in COMPARISONS
        ]

    def adding(self, prop: str, value: str) -> str:
        """The query string with `prop == value` added (replacing an `==` on the same
        property: clicking Bing while Google is set shows Bing, as Plausible does)."""
        kept = tuple(f for f in self.filters if not (f.prop == prop and f.op == "=="))
        return self.query((*kept, segments.Filter(prop, "==", (value,))))

    def chips(self) -> list[dict]:
        """{"label", "href", "edit"} per filter: the link leaves that one out; `edit` opens
        the filter menu on it (the menu then replaces it)."""
        return [
            {
                "label": _chip_label(f),
                "href": "?" + self.query(tuple(g for g in self.filters if g is not f)),
                "edit": "?" + self.query() + f"&edit={n}",
                "locked": f in self.locked,
            }
            for n, f in enumerate(self.filters)
        ]

    @property
    def clear_href(self) -> str:
        return "?" + self.query(self.locked)

    @property
    def removable(self) -> int:
        """How many of the filters a reader may take off."""
        return len([f for f in self.filters if f not in self.locked])


# The filter menu: every property a filter takes (analytics.queries.segments), named as
# the panels name them, and the tests it offers.
MENU = (
    ("page", "Page"),
    ("entry_page", "Entry page"),
    ("hostname", "Hostname"),
    ("goal", "Goal"),
    ("source", "Source"),
    ("referrer", "Referrer"),
    ("channel", "Channel"),
    ("utm_source", "UTM source"),
    ("utm_medium", "UTM medium"),
    ("utm_campaign", "UTM campaign"),
    ("utm_term", "UTM term"),
    ("utm_content", "UTM content"),
    ("country", "Country"),
    ("region", "Region"),
    ("city", "City"),
    ("browser", "Browser"),
    ("browser_version", "Browser version"),
    ("os", "Operating system"),
    ("os_version", "OS version"),
    ("device", "Device"),
    ("screen", "Screen size"),
)
TESTS = (("==", "is"), ("!=", "is not"), ("~", "contains"), ("!~", "does not contain"))


def menu_properties(custom: list[str], view: "View") -> tuple[tuple[str, str], ...]:
    """The menu's properties: MENU, then each custom property sent in the period or
    filtered on (a chip being edited names its own)."""
    named = {f.prop[len(segments.CUSTOM) :] for f in view.filters if f.prop.startswith(segments.CUSTOM)}
    return (*MENU, *((f"{segments.CUSTOM}{name}", f"Property: {name}") for name in sorted({*custom, *named})))


def from_menu(params, view: "View") -> tuple[str, str]:
    """The filter menu's answer (?fprop=&fop=&fvalue=[&freplace=N]) as the query string of
    the view with that filter added, or put in place of filter N; or ("", why not)."""
    prop, op, text = params.get("fprop", ""), params.get("fop", "=="), params.get("fvalue", "").strip()
    if (prop not in dict(MENU) and not prop.startswith(segments.CUSTOM)) or op not in dict(TESTS):
        return "", "Choose a property and a test."
    if not text:
        return "", "Type a value to filter by."
    if prop == "goal" and op not in ("==", "!="):
        return "", "Goals are matched by name (is, is not)."
    values = [value.strip() for value in text.split("|") if value.strip()]
    if prop == "country":  # (countries by name or code, as the panel lists them)
        values = [NAMES.get(value.lower(), value.upper() if len(value) == 2 else value) for value in values]
    try:
        (added,) = segments.parse(f"{prop}{op}{'|'.join(segments.escape(v) for v in values)}")
    except ValueError as e:
        return "", f"That filter cannot be: {e}"
    kept = list(view.filters)
    replaced = params.get("freplace", "")
    if replaced.isdigit() and int(replaced) < len(kept):
        kept[int(replaced)] = added
    else:
        kept.append(added)
    try:
        filters = segments.parse(";".join(str(f) for f in kept))
    except ValueError as e:
        return "", f"That filter cannot be added: {e}"
    return view.query(filters), ""


def menu_state(params, view: "View") -> dict:
    """What the filter menu shows: open on a chip being edited (?edit=N), prefilled."""
    edit = params.get("edit", "")
    if edit.isdigit() and int(edit) < len(view.filters):
        f = view.filters[int(edit)]
        return {"open": True, "replace": edit, "prop": f.prop, "op": f.op, "value": " | ".join(f.values)}
    return {"open": False, "replace": "", "prop": "page", "op": "==", "value": ""}


INTERVALS = ("hour", "day", "week", "month")
CHART_METRICS = ("visitors", "visits", "pageviews", "views_per_visit", "bounce_rate", "visit_duration")


def parse(params, period_query: str) -> View:
    compare = params.get("compare") if params.get("compare") in dict(COMPARISONS) else COMPARISONS[0][0]
    interval = params.get("interval") if params.get("interval") in INTERVALS else ""
    metric = params.get("metric") if params.get("metric") in CHART_METRICS[1:] else ""
    try:
        locked = segments.parse(params.get("locked", ""))  # (a segment link's own: dashboard.views._with_segment)
        filters = segments.parse(params.get("filters", ""))
    except ValueError as e:
        return View(period_query, (), f"Filters ignored: {e}", compare=compare, interval=interval, metric=metric)
    return View(period_query, filters, compare=compare, interval=interval, metric=metric, locked=locked)


OPS = {"==": "is", "!=": "is not", "~": "contains", "!~": "does not contain"}


def _chip_label(f: segments.Filter) -> str:
    """A filter as the menu names its property ("UTM source is x", "Operating system is not y")."""
    values = [label(f.prop, v) for v in f.values]
    if f.prop.startswith(segments.CUSTOM):
        return f"Property {f.prop[len(segments.CUSTOM) :]} {OPS[f.op]} {' or '.join(values)}"
    name = dict(MENU).get(f.prop) or f.prop.replace("_", " ").capitalize()
    return f"{name} {OPS[f.op]} {' or '.join(values)}"
