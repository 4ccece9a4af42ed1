"""Pages: the top pages of a range by visitors (all, or those whose path contains a text), one
page's days, prefix search of paths."""

import functools
import hashlib
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any, NamedTuple, cast

import redis
from django.db.models import Max, Sum

from .. import dimensions
from ..counts import sketches
from ..counts.pages import page_days
from ..models import DailyMetrics, PageDaily, PagePeriod, PeriodVisitors
from ..periods import days_between, monday, period_days, policy_expiry
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import scratch
from . import kept
from .exact import count_unions, exact_sources, exact_visitors
from .stored import day_totals, imported_days, visitors_over

# Pages ranked by visitors: at most this many candidates get their visitors counted (a
# multi-key PFCOUNT each); see top_pages().
MAX_PAGE_CANDIDATES = 5000
EXACT_MARGIN = 5  # rows past the page shown that are made exact too, for the cut


def top_pages(r: redis.Redis, site: SiteInfo, start: date, end: date, limit: int = 10) -> list[dict]:
    """The `limit` pages with the most visitors over the range (see ranked_pages)."""
    return ranked_pages(r, site, start, end, limit)[0]


def ranked_pages(
    r: redis.Redis, site: SiteInfo, start: date, end: date, limit: int = 10, search: str = ""
) -> tuple[list[dict], int]:
    """Pages by visitors over the range, with exact pageviews, and visitors exact for the
    pages shown that had a bitmap every day they had visitors (queries/exact.py); and how
    many pages there are (the breakdown API's `total`). With `search`, only the paths
    containing it (case-insensitive), before ranking, so the count is theirs too.

    Visitors are a union over the whole range (a visitor who came back on several days
    counts once): multi-key PFCOUNT over the fewest keys that cover it, the rollups'
    merged month and week HLLs where whole periods fit, day HLLs for the rest. Per-day
    numbers come from the stored page rows for rolled-up days, from Redis for the others.

    A union costs a multi-key PFCOUNT, so pages are taken in order of visitor-days (the
    sum of their daily visitors, which no union exceeds): once the limit-th best union is
    at least the next page's visitor-days, no other page can enter the top. Past
    2 x limit + 5 candidates the ranking stops there (a page with many one-day visitors
    far down the visitor-days order is the only thing that could be missed)."""
    days = days_between(start, end)
    view = _kept_view(r, site, days)
    totals = view.totals if view else _page_totals(r, site, start, end)
    pageviews, visitor_days, peak, added = totals.pageviews, totals.visitor_days, totals.peak, totals.added
    ranked = _by_visitor_days(totals, search)
    cover: Any = view.cover if view else page_cover(site, start, end)
    visitors: dict[str, int] = {}
    wanted, budget = limit + 5, min(2 * limit + 5, MAX_PAGE_CANDIDATES)
    while True:
        batch = [path for path in ranked[:wanted] if path not in visitors]
        if view:  # (each page's head as one key: its union, kept)
            view.unions(batch)
        pipe = r.pipeline(transaction=False)
        asked = [path for path in batch if cover(path)]  # (a range of gone periods alone has no key left)
        for path in asked:
            pipe.pfcount(*cover(path))
        counted = dict.fromkeys(batch, 0) | dict(zip(asked, pipe.execute()))
        if cover.gone:  # (merged HLLs the policy let go: their periods' stored rows)
            counted = page_unions(r, site, start, end, cover, batch, counted)
        # an estimate is never shown above the exact pageviews beside it, nor above the sum of the days' visitors
        visitors.update(
            (path, max(peak[path], min(counted[path], pageviews[path], visitor_days[path] - added[path])) + added[path])
            for path in batch
        )
        best = sorted(visitors.values(), reverse=True)[:limit]
        if wanted >= len(ranked) or wanted >= budget:
            break
        if len(best) == limit and best[-1] >= visitor_days[ranked[wanted]]:
            break
        wanted = min(2 * wanted, budget)
    pages: list[dict[str, Any]] = [{"page": p, "visitors": v, "pageviews": pageviews[p]} for p, v in visitors.items()]
    order = lambda p: (-p["visitors"], -p["pageviews"], p["page"])  # noqa: E731
    pages.sort(key=order)
    shown = pages[: limit + EXACT_MARGIN]
    # Exact where a page had a bitmap every day it had visitors (queries/exact.py): the
    # ranking is the HLLs', and only the rows shown pay for exactness, with a few past
    # them, so that the cut is made on exact numbers where the estimates are close (the
    # top 3 is then the top 3 of the top 30).
    fields = {dimensions.field("page", p["page"]): p for p in shown}
    counts = view.exact(list(fields)) if view else _exact_pages(r, site, days, totals, list(fields))
    for f, n in counts.items():
        fields[f]["visitors"] = n + added[fields[f]["page"]]
    return sorted(shown, key=order)[:limit], len(ranked)


def _present(site: SiteInfo, totals: "_Totals", fields: list[str]) -> dict[str, set[date]]:
    """{page field: the days it had visitors}, from its stored rows and its live days."""
    present: dict[str, set[date]] = {f: set() for f in fields}
    paths = {dimensions.split(f)[1]: f for f in fields}
    for path, day in PageDaily.objects.filter(
        site_id=site.id, date__in=totals.final - totals.imported, path__in=list(paths)
    ).values_list("path", "date"):
        present[paths[path]].add(day)
    for day, day_paths in totals.live.items():
        for path, f in paths.items():
            if path in day_paths:
                present[f].add(day)
    return present


def _exact_pages(r: redis.Redis, site: SiteInfo, days: list[date], totals: "_Totals", fields: list[str]):
    """{page field: its visitors over the days} where its bitmaps hold them all."""
    native = [day for day in days if day not in totals.imported]
    return exact_visitors(r, site, native, fields, _present(site, totals, fields))


class _KeptView:
    """ranked_pages()'s reads where the range has a closed head kept (queries/kept.py):
    the head's totals and each page's union over it, kept; the open days as they are."""

    def __init__(self, r: redis.Redis, site: SiteInfo, part: kept.Part, head: list[date], rest: list[date]):
        self.r, self.site, self.part, self.head, self.rest = r, site, part, head, rest
        self.kept = part.table("pages", PAGE_COLUMNS, lambda: _as_table(_page_totals(r, site, head[0], head[-1])))
        self.open = _page_totals(r, site, rest[0], rest[-1]) if rest else _Totals(set(), set(), {}, {}, {}, {}, {})
        pageviews, visitor_days = dict(self.open.pageviews), dict(self.open.visitor_days)
        peak, added = dict(self.open.peak), defaultdict(int, self.open.added)
        for path, row in self.kept.items():
            pageviews[path] = pageviews.get(path, 0) + row["pageviews"]
            visitor_days[path] = visitor_days.get(path, 0) + row["visitor_days"]
            peak[path] = max(peak.get(path, 0), row["peak"])
            added[path] += row["added"]
        self.totals = _Totals(self.open.final, self.open.imported, self.open.live, pageviews, visitor_days, peak, added)
        self.merged: dict[str, str] = {}

    # (the covers are read on the first union: a filtered breakdown's candidates need none)
    @functools.cached_property
    def head_cover(self):
        return page_cover(self.site, self.head[0], self.head[-1])

    @functools.cached_property
    def open_cover(self):
        return page_cover(self.site, self.rest[0], self.rest[-1]) if self.rest else _no_cover

    @functools.cached_property
    def shape(self) -> str:
        return hashlib.sha1(repr(self.head_cover.shape).encode()).hexdigest()[:12]

    @functools.cached_property
    def cover(self):
        def cover(path: str) -> list[str]:
            return [*([self.merged[path]] if path in self.merged else []), *self.open_cover(path)]

        cover.gone = []  # type: ignore[attr-defined]  # (a gone head makes no view: _kept_view())
        return cover

    def unions(self, paths: list[str]):
        """Make sure each page's head union is kept (one key each, in cover())."""
        if not paths:
            return
        fields = {dimensions.field("page", path): path for path in paths}
        made = self.part.unions(list(fields), parts=lambda f: self.head_cover(fields[f]), name=f"pu:{self.shape}")
        self.merged.update((fields[f], key) for f, key in made.items())

    def exact(self, fields: list[str]) -> dict[str, int]:
        """{page field: its visitors over the range} where its bitmaps hold them all, the
        head's OR kept."""
        totals = self.kept
        head_days = [day for day in self.head if day not in self.part.imported]
        head = self.part.bitmaps(fields, head_days, present=lambda ask: _present(self.site, self._head_totals(), ask))
        open_days = [day for day in self.rest if day not in self.open.imported]
        open_exact = exact_sources(self.r, self.site, open_days, fields, _present(self.site, self.open, fields))
        sources = {}
        for f in fields:
            path = dimensions.split(f)[1]
            in_head = path in totals and totals[path]["visitor_days"] > totals[path]["added"]
            in_open = self.open.visitor_days.get(path, 0) > self.open.added.get(path, 0)
            if (f in head or not in_head) and (f in open_exact or not in_open) and (in_head or in_open):
                sources[f] = [*([head[f]] if f in head else []), *open_exact.get(f, [])]
        return count_unions(self.r, self.site.id, sources)

    def _head_totals(self) -> "_Totals":
        """The head's days as _present() reads them (which are stored, imported, live)."""
        final = set(
            DailyMetrics.objects.filter(site_id=self.site.id, final=True, date__in=self.head).values_list(
                "date", flat=True
            )
        )
        live = page_days(self.r, self.site.id, [day for day in self.head if day not in final])
        return _Totals(final, self.part.imported, live, {}, {}, {}, {})


def _no_cover(path: str) -> list[str]:
    return []


PAGE_COLUMNS = ("pageviews", "visitor_days", "peak", "added")


def _as_table(totals: "_Totals") -> dict[str, dict[str, int]]:
    return {
        path: {
            "pageviews": totals.pageviews[path],
            "visitor_days": totals.visitor_days[path],
            "peak": totals.peak.get(path, 0),
            "added": totals.added.get(path, 0),
        }
        for path in totals.pageviews
    }


def _kept_view(r: redis.Redis, site: SiteInfo, days: list[date], unions: bool = True) -> _KeptView | None:
    """The range's kept view, or None: too few closed days, or, for a caller that counts
    `unions`, a head whose merged period keys the policy let go (page_unions() reads those
    from rows; the totals need no cover)."""
    head = kept.closed_head(site, days)
    if len(head) < kept.MIN_DAYS:
        return None
    view = _KeptView(r, site, kept.Part(r, site, head, day_totals(site, days)), head, days[len(head) :])
    return None if unions and view.head_cover.gone else view


class _Totals(NamedTuple):
    final: set  # the range's days with stored page rows
    imported: set  # of those, another product's daily totals
    live: dict  # day -> {path: (visitors, pageviews)} for the other days, from Redis
    pageviews: dict[str, int]
    visitor_days: dict[str, int]  # the sum of a page's daily visitors: no union over the days exceeds it
    peak: dict[str, int]  # its largest day's visitors: no union is below it, whatever keys expired
    added: dict[str, int]  # visitors on imported days: summed, outside any union


def _page_totals(r: redis.Redis, site: SiteInfo, start: date, end: date) -> _Totals:
    """Each page's pageviews and visitor-days over the range: the stored rows of rolled-up
    days (one SQL aggregate), Redis for the others (one round trip)."""
    days = days_between(start, end)
    final = set(
        DailyMetrics.objects.filter(site_id=site.id, final=True, date__range=(start, end)).values_list(
            "date", flat=True
        )
    )
    pageviews: dict[str, int] = {}
    visitor_days: dict[str, int] = {}
    peak: dict[str, int] = {}
    imported = imported_days(site.id, start, end)
    added: dict[str, int] = defaultdict(int)
    for stored_days, of_import in ((final - imported, False), (final & imported, True)):
        if not stored_days:
            continue
        totals = (
            PageDaily.objects.filter(site_id=site.id, date__in=stored_days)
            .values("path")
            .annotate(views=Sum("pageviews"), people=Sum("visitors"), most=Max("visitors"))
        )
        for row in totals:
            path = row["path"]
            pageviews[path] = pageviews.get(path, 0) + row["views"]
            visitor_days[path] = visitor_days.get(path, 0) + row["people"]
            if of_import:
                added[path] += row["people"]
                peak.setdefault(path, 0)
            else:
                peak[path] = max(peak.get(path, 0), row["most"])
    live = page_days(r, site.id, [day for day in days if day not in final])
    for day_pages in live.values():
        for path, (people, views) in day_pages.items():
            pageviews[path] = pageviews.get(path, 0) + views
            visitor_days[path] = visitor_days.get(path, 0) + people
            peak[path] = max(peak.get(path, 0), people)

    return _Totals(final, imported, live, pageviews, visitor_days, peak, added)


def _by_visitor_days(totals: _Totals, search: str = "") -> list[str]:
    """The paths (containing `search`, case-insensitive) by visitor-days, most first."""
    needle = search.lower()
    visitor_days, pageviews = totals.visitor_days, totals.pageviews
    return sorted((p for p in visitor_days if needle in p.lower()), key=lambda p: (-visitor_days[p], -pageviews[p], p))


def candidate_pages(
    r: redis.Redis, site: SiteInfo, start: date, end: date, limit: int, search: str = "", bounds: dict | None = None
) -> list[str]:
    """The pages a filtered breakdown counts, most visitor-days first: the ranking before
    ranked_pages() counts any union (a filtered row's visitors are counted from bitmaps
    anyway, so the unfiltered unions would be paid for nothing). `bounds`, when given,
    gets each one's (visitor-days, largest day's visitors): filtered.breakdown() skips the
    unions of rows that cannot reach the page shown."""
    view = _kept_view(r, site, days_between(start, end), unions=False)
    totals = view.totals if view else _page_totals(r, site, start, end)
    ranked = _by_visitor_days(totals, search)[:limit]
    if bounds is not None:
        bounds.update((path, (totals.visitor_days[path], totals.peak.get(path, 0))) for path in ranked)
    return ranked


def page_cover(site: SiteInfo, start: date, end: date):
    """A function path -> HLL keys whose union is the page's visitors from start to end:
    whole final months and weeks inside the range by their merged keys, other days by
    their day keys while those live (keep_page_days after the day is final); an older day outside any whole
    period by its week's merged key, which also holds the week's other days (an
    overestimate, which callers bound by the sum of the days' stored visitors). The
    function's `gone` attribute lists the parts ((unit, start)) whose merged keys the
    policy has let go (keep_page_period_days after the period): their stored rows
    (PagePeriod) count instead (page_unions())."""
    periods = PeriodVisitors.objects.filter(site_id=site.id, final=True, start__gte=start, start__lte=end)
    covered: set[date] = set()
    parts = []
    for row in sorted(periods, key=lambda p: (p.unit != "month", p.start)):  # months first
        span = period_days(row.unit, row.start)
        if span[-1] <= end and not covered.intersection(span):
            parts.append((row.unit, row.start))
            covered.update(span)
    day_keys_from = site.today() - timedelta(days=site.keep_page_days)
    final = set(
        DailyMetrics.objects.filter(site_id=site.id, final=True, date__range=(start, end)).values_list(
            "date", flat=True
        )
    )
    rest, weeks = [], []
    for day in days_between(start, end):
        if day in covered:
            continue
        if day >= day_keys_from or day not in final:  # (a day's keys expire only once it is final)
            rest.append(day)
        elif ("week", monday(day)) not in weeks:
            weeks.append(("week", monday(day)))
    parts += weeks
    now = datetime.now(UTC)
    gone = [part for part in parts if policy_expiry(period_days(*part)[-1], site.keep_page_period_days) <= now]

    def keys_of(path: str) -> list[str]:
        return [
            keys.period_visitors(site.id, unit, first, path) for unit, first in parts if (unit, first) not in gone
        ] + [keys.page_visitors(site.id, day, path) for day in rest]

    keys_of.gone = gone  # type: ignore[attr-defined]  # (a function's attributes: read by page_unions())
    keys_of.shape = (parts, rest)  # type: ignore[attr-defined]  # (which keys: queries/kept.py names its unions by it)
    keys_of.live_days = [  # type: ignore[attr-defined]  # (likewise)
        day for day in days_between(start, end) if not any(day in period_days(*part) for part in gone)
    ]
    return keys_of


def page_unions(
    r: redis.Redis, site: SiteInfo, start: date, end: date, cover, paths: list[str], counted: dict[str, int]
) -> dict[str, int]:
    """The visitors of pages over a range part of whose merged HLLs have expired: one
    PFCOUNT of what is left (cover's keys) and the stored sketches of the range's days in
    the gone periods (counts/sketches.py), ±0.81%. A page some of whose days there have
    no sketch (rolled up before sketches were kept): the union of what is left
    (`counted`) and each gone period's stored row, summed, times the share of the site's
    visitors over those parts that are distinct people over the range (its stored period
    unions against its union over the range), the page's visitors taken to come back
    across weeks and months as everyone's do; exact for a range that is one gone period
    (its row)."""
    gone_days = [day for day in days_between(start, end) if any(day in period_days(*part) for part in cover.gone)]
    had = defaultdict(list)  # path -> its days there with visitors
    for path, day in PageDaily.objects.filter(
        site_id=site.id, path__in=paths, date__in=gone_days, visitors__gt=0
    ).values_list("path", "date"):
        had[path].append(day)
    result: dict[str, int] = {}
    with scratch(r, site.id) as tmp:
        wanted = [(day, dimensions.field("page", path)) for path in paths for day in had[path]]
        thawed = sketches.thaw(r, site.id, wanted, tmp)
        whole = [path for path in paths if all((d, dimensions.field("page", path)) in thawed for d in had[path])]
        parts = {
            path: [*cover(path), *(thawed[d, dimensions.field("page", path)] for d in had[path])] for path in whole
        }
        asked = [path for path in whole if parts[path]]
        pipe = r.pipeline(transaction=False)
        for path in asked:
            pipe.pfcount(*parts[path])
        result.update(dict.fromkeys(whole, 0) | dict(zip(asked, (int(n) for n in pipe.execute()))))
    rest = [path for path in paths if path not in result]
    if rest:
        result.update(_scaled_page_unions(r, site, start, end, cover, rest, counted))
    return result


def _scaled_page_unions(
    r: redis.Redis, site: SiteInfo, start: date, end: date, cover, paths: list[str], counted: dict[str, int]
) -> dict[str, int]:
    """page_unions() for pages without their gone days' sketches: rows and the site's share."""
    rows: defaultdict[str, dict[tuple[str, date], int]] = defaultdict(dict)
    for path, unit, first, n in PagePeriod.objects.filter(
        site_id=site.id, path__in=paths, unit__in=["week", "month"], start__in=[first for _, first in cover.gone]
    ).values_list("path", "unit", "start", "visitors"):
        rows[path][unit, first] = n
    site_parts = {
        (row.unit, row.start): row.visitors
        for row in PeriodVisitors.objects.filter(site_id=site.id, final=True, start__in=[f for _, f in cover.gone])
    }
    with scratch(r, site.id) as tmp:
        spans = {"all": days_between(start, end)}
        if cover.live_days:
            spans["live"] = cover.live_days
        unions, _ = visitors_over(r, site, spans, tmp)
    parts_sum = unions.get("live", 0) + sum(site_parts.get(part, 0) for part in cover.gone)
    share = min(1.0, unions["all"] / parts_sum) if parts_sum else 1.0
    result = {}
    for path in paths:
        pieces = [n for n in (counted.get(path, 0), *(rows[path].get(part, 0) for part in cover.gone)) if n]
        result[path] = pieces[0] if len(pieces) == 1 else round(sum(pieces) * share)
    return result


SEARCH_CANDIDATES = 200  # prefix matches ranked for one suggestion list


def search_pages(r: redis.Redis, site: SiteInfo, prefix: str, limit: int = 10) -> list[str]:
    """Paths starting with `prefix`, most visited first (all-time pageviews, then byte
    order): ZRANGEBYLEX over a set of equal scores finds up to SEARCH_CANDIDATES matches,
    ZMSCORE in the pageview-ranked set orders them."""
    low = b"[" + prefix.encode() if prefix else b"-"
    high = b"[" + prefix.encode() + b"\xff" if prefix else b"+"
    matches = cast(list[bytes], r.zrangebylex(keys.page_search(site.id), low, high, start=0, num=SEARCH_CANDIDATES))
    if not matches:
        return []
    scores = r.zmscore(keys.page_rank(site.id), matches)  # type: ignore[arg-type]  # (stubs: str only; bytes work)
    ranked = sorted(zip(matches, scores), key=lambda m: (-(m[1] or 0), m[0]))
    return [path.decode() for path, _ in ranked[:limit]]


def page_union(r: redis.Redis, site: SiteInfo, start: date, end: date, path: str) -> int:
    """One page's visitors over the range as ranked_pages() counts its row before making it
    exact: the union of its period and day HLLs (page_cover; gone periods by their stored
    rows), never below its largest day nor above its pageviews or its days summed. What a
    page filter's visitors are over days whose filter bitmaps expired (expired.py), so
    that the filter and the page's row agree there too."""
    rows = page_timeseries(r, site, path, start, end)
    people = [row["visitors"] for row in rows]
    views = sum(row["pageviews"] for row in rows)
    cover = page_cover(site, start, end)
    counted = {path: r.pfcount(*cover(path)) if cover(path) else 0}
    if cover.gone:
        counted = page_unions(r, site, start, end, cover, [path], counted)
    return max(max(people, default=0), min(counted[path], views, sum(people)))


def pageviews_of(r: redis.Redis, site: SiteInfo, wanted: dict[date, list[str]]) -> dict[tuple[date, str], int]:
    """The pageviews of some pages on some days ({day: paths}): the stored rows of final
    days, the day's counters for the others; one query and one round trip."""
    days = [day for day, paths in wanted.items() if paths]
    if not days:
        return {}
    final = set(DailyMetrics.objects.filter(site_id=site.id, final=True, date__in=days).values_list("date", flat=True))
    found = {}
    paths = {path for day in final for path in wanted[day]}
    for day, path, views in PageDaily.objects.filter(site_id=site.id, date__in=final, path__in=paths).values_list(
        "date", "path", "pageviews"
    ):
        if path in wanted[day]:
            found[day, path] = views
    live = [(day, path) for day in days if day not in final for path in wanted[day]]
    pipe = r.pipeline(transaction=False)
    for day, path in live:
        pipe.get(keys.page_pageviews(site.id, day, path))
    found.update((pair, int(n or 0)) for pair, n in zip(live, pipe.execute()))
    return found


def page_timeseries(r: redis.Redis, site: SiteInfo, path: str, start: date, end: date) -> list[dict]:
    """One page's visitors (HLL) and pageviews per day: the stored rows for final days
    (their day keys expire after keep_page_days), Redis for the others."""
    days = days_between(start, end)
    final = set(
        DailyMetrics.objects.filter(site_id=site.id, final=True, date__range=(start, end)).values_list(
            "date", flat=True
        )
    )
    stored = {
        row.date: (row.visitors, row.pageviews)
        for row in PageDaily.objects.filter(site_id=site.id, path=path, date__in=final)
    }
    live = [day for day in days if day not in final]
    pipe = r.pipeline(transaction=False)
    for day in live:
        pipe.pfcount(keys.page_visitors(site.id, day, path))
        pipe.get(keys.page_pageviews(site.id, day, path))
    answers = iter(pipe.execute())
    for day in live:
        estimate, views = next(answers), int(next(answers) or 0)
        stored[day] = (min(estimate, views), views)
    return [
        {"date": day.isoformat(), "visitors": stored.get(day, (0, 0))[0], "pageviews": stored.get(day, (0, 0))[1]}
        for day in days
    ]
