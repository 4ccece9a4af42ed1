"""Plausible's Stats API v1 parameters (plausible_v1.py): a request naming `site_id` instead
of `site` is Plausible's, and takes Plausible's parameters and defaults under these names.
Declared as params.py declares Tally's own, and described in the document from here."""

import re
from datetime import date

from .. import sites
from ..capture import inbox
from ..queries import segments
from ..store.connection import get_redis
from .http import ApiError, bearer_site
from .params import MAX_LIMIT, MAX_RANGE_DAYS, IntParam, NamesParam, OptionalChoiceParam, Param, named_period

V1_PERIODS = ("12mo", "6mo", "month", "30d", "7d", "day", "custom")
V1_WILDCARD = re.compile(r"\*\*([^*]+)\*\*")  # `**text**`: a page or value containing text


class SiteIdParam(Param):
    """`site_id`, the site's domain, which the Bearer key must be for (else a 401, as Plausible)."""

    def read(self, request) -> sites.SiteInfo:
        domain = request.GET.get(self.name, "").strip().lower()
        if not domain:
            raise ApiError(400, "site_id: missing (the site's domain)")
        site = bearer_site(request)
        if site.domain != domain:
            raise ApiError(401, f"Invalid API key or site ID: this key is not for site {domain[:200]!r}")
        inbox.flush(get_redis(), site)  # (the single events acknowledged before this read are in its numbers)
        return site


class V1PeriodParam(Param):
    """`period` (default 30d) and `date`, Plausible v1's names only."""

    def read(self, request, site) -> tuple[date, date]:
        name = request.GET.get(self.name, "").strip() or "30d"
        if name not in V1_PERIODS:
            raise ApiError(400, f"period: invalid period {name[:60]!r}; choose from {', '.join(V1_PERIODS)}")
        start, end = named_period(name, request.GET.get("date", "").strip(), site.today())
        if (end - start).days + 1 > MAX_RANGE_DAYS:
            raise ApiError(400, f"date: at most {MAX_RANGE_DAYS} days")
        return start, end


class V1IntervalParam(Param):
    """`interval`: date or month (Plausible's default: month for 6mo and 12mo), as Tally's day or month."""

    def read(self, request) -> str:
        period = request.GET.get("period", "").strip()
        value = request.GET.get(self.name) or ("month" if period in ("6mo", "12mo") else "date")
        if value not in ("date", "month"):
            raise ApiError(400, f"interval: invalid interval {value[:60]!r}; choose from date, month")
        return "day" if value == "date" else value


class V1FiltersParam(Param):
    """Plausible v1's `filters` (`visit:source==Google;event:page==/blog**`) as Tally's."""

    def read(self, request) -> tuple:
        try:
            return segments.parse(v1_filters(request.GET.get(self.name, "")))
        except ValueError as e:
            raise ApiError(400, f"filters: {e}") from None


def v1_filters(text: str) -> str:
    """v1 filters in Tally's syntax: `==`, `!=` and `|` are the same; a wildcard value is
    Tally's only when it is `**text**` (under `==`, contains: `~text`; under `!=`, does
    not contain: `!~text`); any other wildcard is a ValueError naming it, not an
    approximation."""
    parts = []
    for part in re.split(r"(?<!\\);", text):
        at = [(part.find(op), op) for op in ("==", "!=") if op in part]
        if not at or "*" not in part:
            parts.append(part)  # (segments.parse names what is wrong with it)
            continue
        where, op = min(at)
        values = re.split(r"(?<!\\)\|", part[where + 2 :])
        found = [V1_WILDCARD.fullmatch(v.strip()) for v in values]
        if not all(found):
            raise ValueError(
                f"{part[:80]!r}: Tally matches no wildcard pattern but `**text**` (contains text, "
                "case-insensitive), for every value of the filter"
            )
        parts.append(f"{part[:where]}{'~' if op == '==' else '!~'}{'|'.join(m.group(1) for m in found if m)}")
    return ";".join(parts)


SITE_ID = SiteIdParam(
    "site_id",
    "Instead of `site`: Plausible's Stats API v1. The request then takes Plausible's parameters (period "
    "default 30d, metrics default visitors, interval date or month, limit default 100, v1 filters) and "
    "is answered in Plausible's v1 shape (docs/api.md, Plausible's Stats API v1).",
    {"type": "string"},
)
V1_PERIOD = V1PeriodParam("period", "Plausible's period.", {"type": "string", "enum": list(V1_PERIODS)})
V1_INTERVAL = V1IntervalParam("interval", "date or month.", {"type": "string", "enum": ["date", "month"]})
V1_FILTERS = V1FiltersParam("filters", "Plausible v1 filters.", {"type": "string"})
V1_METRICS = NamesParam("metrics", "Plausible's metric names, comma-separated (default visitors).")
V1_LIMIT = IntParam("limit", "Rows per page.", 100, 1, MAX_LIMIT)
V1_WITH_IMPORTED = OptionalChoiceParam(
    "with_imported",
    "true: count the days imported from Plausible's CSV export (as Plausible, off by default).",
    ("true", "false"),
)
V1_COMPARE = OptionalChoiceParam("compare", "Add each metric's change.", ("previous_period",))
