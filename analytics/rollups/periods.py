"""Week and month unions: each ISO week's and calendar month's visitors as PeriodVisitors
rows, and each page's day HLLs merged (PFMERGE) into lasting week and month keys.

The page folds are what let a day's page HLLs go early (keep_page_days, 35 days by
default): a page's visitors over an older range are read from its week and month HLLs
(keep_page_period_days, 400), its per-day numbers from the stored PageDaily rows.
10,000 dense pages kept 400 days as day HLLs would be ~48 GB; as 35 days plus ~66 week
and month HLLs, about a quarter of that (make bench prints the model)."""

from datetime import date
from typing import cast

import redis

from ..counts.unions import range_visitors
from ..models import PagePeriod, PeriodVisitors, Site
from ..periods import monday, month_start, period_days, policy_expiry
from ..sites import SiteInfo, sealed_days
from ..store import keys
from ..store.scratch import Scratch
from .expiry import period_expiry, periods_first
from .rows import upsert


def merge_periods(r: redis.Redis, site: Site, info: SiteInfo, days: list[date], today: date, tmp: Scratch) -> list:
    """Store the visitors of each week and month the days fall in (exact bitmap unions for
    stable-salt sites; see analytics.counts.unions), and PFMERGE each page's day HLLs
    into its week and month HLLs (top pages count unions over ranges with them)."""
    sid = info.id
    rolled = set(days)  # (the days rolled up now)
    periods = sorted({("week", monday(d)) for d in days} | {("month", month_start(d)) for d in days})
    spans, partial = {}, set()
    every = sorted({d for unit, start in periods for d in period_days(unit, start) if d <= today})
    sealed = sealed_days(site, every)
    for unit, start in periods:
        present = [d for d in period_days(unit, start) if d <= today and d not in sealed]
        if present:
            spans[unit, start] = present
        if sealed.intersection(period_days(unit, start)):
            partial.add(
                (unit, start)
            )  # (its sealed days' bitmaps are gone: the union cannot shrink below what was stored)
    visitors = range_visitors(r, info, spans, tmp)
    stored = {
        (row.unit, row.start): row.visitors
        for row in PeriodVisitors.objects.filter(site=site, start__in=[s for _, s in partial])
    }
    for period in partial & set(visitors):
        visitors[period] = max(visitors[period], stored.get(period, 0))
    rows = []
    for (unit, start), present in spans.items():
        last = period_days(unit, start)[-1]
        final = last < today
        # Readers use a period's key once it has ended (queries/pages.py page_cover), so it
        # is merged then, from every day still there: a nightly rollup merged the month so
        # far, every page, every night (31 sources a page; half of a one-day rollup's time).
        # A day whose page keys go before its period ends (keep_page_days shorter than a
        # month) is merged as it is rolled up; PFMERGE keeps what the key holds.
        page_days = (
            present
            if final
            else [
                d
                for d in present
                if d in rolled and (unit, start) in periods_first(d, policy_expiry(d, site.keep_page_days))
            ]
        )
        if page_days:
            members = r.sunion(
                *(keys.pages_index(sid, d) for d in page_days)  # type: ignore[arg-type]  # (stubs: a list; args work)
            )
            paths = sorted(p.decode() for p in cast(set[bytes], members))
            pipe, until = r.pipeline(transaction=False), period_expiry(site, unit, start)
            for path in paths:
                page_key = keys.period_visitors(sid, unit, start, path)
                pipe.pfmerge(page_key, *(keys.page_visitors(sid, d, path) for d in page_days))
                if final:
                    pipe.pfcount(page_key)  # (before its expiry: a period of old history may expire at once)
                pipe.expireat(page_key, until)
            answers = pipe.execute()
            if final and paths:
                _store_page_periods(site, unit, start, dict(zip(paths, answers[1::3])))
        rows.append(PeriodVisitors(site=site, unit=unit, start=start, visitors=visitors[unit, start], final=final))
    PeriodVisitors.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["site", "unit", "start"],
        update_fields=["visitors", "final", "updated"],
    )
    return rows


def _store_page_periods(site: Site, unit: str, start: date, counts: dict[str, int]):
    """Each page's visitors over an ended period, as rows: what its union over history is
    counted from once the period's HLLs expire (queries/pages.py). A row never shrinks: a
    period HLL made again after it expired holds only the days still in Redis."""
    before = dict(
        PagePeriod.objects.filter(site=site, unit=unit, start=start, path__in=list(counts)).values_list(
            "path", "visitors"
        )
    )
    rows = [(site.pk, unit, start, path, max(int(n), before.get(path, 0))) for path, n in counts.items()]
    upsert(PagePeriod, ("site_id", "unit", "start", "path", "visitors"), rows, unique=4)
