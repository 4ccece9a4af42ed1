"""A site's numbers per day, week or month, and a period's headline summary.

Closed days come from their stored rollup rows; today and days no rollup has finished are
counted live from Redis (analytics.counts). Visitors are HyperLogLog estimates (0.81%
standard error); pageviews are exact counters; DAU and new visitors exact bitmap counts.
"""

from datetime import date, datetime, timedelta
from typing import Any

import redis
from django.db.models import Q

from .. import dimensions
from ..counts.days import day_metrics
from ..models import DailyMetrics, PeriodVisitors, Site
from ..periods import days_between, period_days, period_start
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import scratch
from .breakdown import field_days, rates_over, visit_totals
from .stored import imported_days, visitors_over

METRICS = ("visitors", "pageviews", "dau", "new_visitors", "wau", "mau", "stickiness")
UNION_STORED = (
    "an estimate: some days' raw keys have expired, so the visitors over the range are the days' stored "
    "visitors summed times the share of distinct people the rollups stored (DAU, WAU, MAU); no stated bound"
)
UNION_SKETCHED = (
    "an estimate: some days' raw keys have expired, so the visitors over the range are a HyperLogLog union "
    "of the days' sketches the rollup stored (±0.81%)"
)
UNION_IMPORTED = (
    "a sum: some days are imported daily totals (Plausible's export), whose visitors cannot be told apart "
    "from one day to the next, so their days' visitors are added up, as Plausible does"
)
UNION_DAILY_SALT = "an estimate: daily-salt visitors over several days are a HyperLogLog union (±0.81%)"
DEFAULT_METRICS = ("visitors", "pageviews", "dau", "new_visitors")
PERIOD_METRICS = ("visitors", "pageviews", "new_visitors")  # for interval=week|month
WINDOW_METRICS = {"wau", "mau", "stickiness"}
VISIT_METRICS = ("visits", "bounce_rate", "visit_duration", "views_per_visit")  # of the visits started in a row's days


def daily_values(r: redis.Redis, site: SiteInfo, start: date, end: date, windows: bool = True) -> dict[date, dict]:
    """Every metric of every day: closed days from their stored rollup rows, the others
    live from Redis: today, yesterday (late events still arrive, and the cohort beside it
    is live too), and days no rollup has finished yet."""
    days = days_between(start, end)
    live_from = site.today() - timedelta(days=1)
    values: dict[date, dict] = {
        row.date: {
            "visitors": row.visitors,
            "pageviews": row.pageviews,
            "dau": row.dau,
            "new_visitors": row.new_visitors,
            "wau": row.wau,
            "mau": row.mau,
        }
        for row in DailyMetrics.objects.filter(site_id=site.id, final=True, date__range=(start, end)).filter(
            Q(date__lt=live_from) | Q(imported__isnull=False)  # (imported days have no keys to count live)
        )
    }
    missing = [day for day in days if day not in values]
    if missing:
        with scratch(r, site.id) as tmp:
            values.update(day_metrics(r, site, missing, tmp, windows=windows))
    for row in values.values():
        if "mau" in row:
            row["stickiness"] = round(row["dau"] / row["mau"], 4) if row["mau"] else 0.0
    return values


def timeseries(
    r: redis.Redis, site: SiteInfo, start: date, end: date, metrics=DEFAULT_METRICS, interval: str = "day"
) -> list[dict]:
    """One row per day (or per ISO week / calendar month touching the range), zeros
    included. Week and month visitors are true unions, not sums of days (exact bitmap
    unions for stable-salt sites; see analytics.counts.unions). Visit metrics are those
    of the visits that started in the row's days (as aggregate() counts them)."""
    values = daily_values(r, site, start, end, windows=bool(WINDOW_METRICS & set(metrics)))
    days = days_between(start, end)
    visits = field_days(r, site, days, dimensions.TOTAL) if set(VISIT_METRICS) & set(metrics) else {}
    if interval == "day":
        rows = []
        for day in days:
            of_visits = visit_row(visits, [day], metrics)
            rows.append(
                {"date": day.isoformat(), **{m: of_visits[m] if m in of_visits else values[day][m] for m in metrics}}
            )
        return rows

    groups: dict[date, list[date]] = {}
    for day in days:
        groups.setdefault(period_start(interval, day), []).append(day)
    imported = imported_days(site.id, start, end)  # (a period's stored union has none of their visitors)
    stored = {
        row.start: row.visitors
        for row in PeriodVisitors.objects.filter(site_id=site.id, unit=interval, final=True, start__in=list(groups))
        if not imported.intersection(groups[row.start])
    }
    with scratch(r, site.id) as tmp:
        live, _ = visitors_over(r, site, groups, tmp)
    rows = []
    for first, members in groups.items():
        whole = members == period_days(interval, first)
        row: dict[str, Any] = {"date": first.isoformat()}
        of_visits = visit_row(visits, members, metrics)
        for metric in metrics:
            if metric in of_visits:
                row[metric] = of_visits[metric]
            elif metric == "visitors":
                row[metric] = stored[first] if whole and first in stored else live[first]
            elif metric == "new_visitors" and site.daily_salt:
                row[metric] = None
            else:
                row[metric] = sum(values[day][metric] for day in members)
        rows.append(row)
    return rows


def visit_row(counts: dict[date, dict[str, int]], days: list[date], metrics) -> dict:
    """The visit metrics among `metrics` over `days`, from each day's visit counts
    (field_days()): counts summed first, then the rates, as over any range."""
    wanted = [m for m in metrics if m in VISIT_METRICS]
    if not wanted:
        return {}
    totals = rates_over(counts, days)
    return {m: totals[m] for m in wanted}


def summary(r: redis.Redis, site: SiteInfo, start: date, end: date, values: dict | None = None) -> dict:
    """Headline numbers of a period: unique visitors over the whole period (a union, not a
    sum of days: exact for stable-salt sites), pageviews and new visitors summed, DAU
    averaged, WAU and MAU on its last day, stickiness = average DAU / MAU on the last day."""
    values = values or daily_values(r, site, start, end)
    days = days_between(start, end)
    rows = [values[day] for day in days]
    last = values[min(end, site.today())] if start <= site.today() else rows[-1]
    average_dau = sum(row["dau"] for row in rows) / len(rows)
    dau = int(average_dau + 0.5)  # an average of people: whole people (half up)
    visitors, expired = period_visitors(r, site, days)
    if expired:
        estimates = {"visitors": {"sketches": UNION_SKETCHED, "imported": UNION_IMPORTED}.get(expired, UNION_STORED)}
    elif site.daily_salt and len(days) > 1:
        estimates = {"visitors": UNION_DAILY_SALT}
    else:
        estimates = {}
    return {
        "estimates": estimates,
        "visitors": visitors,
        "pageviews": sum(row["pageviews"] for row in rows),
        "dau": dau,
        "wau": last["wau"],
        "mau": last["mau"],
        "stickiness": round(average_dau / last["mau"], 4) if last["mau"] else 0.0,  # (not the rounded DAU)
        "new_visitors": _new_visitors(site, rows),
    }


def period_visitors(r: redis.Redis, site: SiteInfo, days: list[date]) -> tuple[int, str]:
    """(the days' unique visitors, why they are an estimate: stored.visitors_over()):
    summary()'s visitors, for a caller that wants no other number (a conversion rate's
    denominator need not read every day's pageviews, WAU and MAU)."""
    with scratch(r, site.id) as tmp:
        unions, expired = visitors_over(r, site, {"period": days}, tmp)
    return unions["period"], expired


def _new_visitors(site: SiteInfo, rows) -> int | None:
    """New visitors over the days, or None where they were not counted: a daily-salt site
    (every visitor is new), or a range reaching days stored while the site was one (their
    rows say None: a stable site's total over them would be a guess)."""
    if site.daily_salt or any(row["new_visitors"] is None for row in rows):
        return None
    return sum(row["new_visitors"] for row in rows)


AGGREGATE_METRICS = ("visitors", "pageviews", "dau", "wau", "mau", "stickiness", "new_visitors", *VISIT_METRICS)
COMPARISONS = ("previous_period", "year")


def aggregate(
    r: redis.Redis,
    site: SiteInfo,
    start: date,
    end: date,
    metrics=AGGREGATE_METRICS,
    compare: str | None = None,
    values: dict | None = None,
) -> dict:
    """A period's headline numbers in Plausible's shape, {metric: {"value": v}}, with
    `compare="previous_period"` adding each metric's "change" in percent against the
    period of the same length just before (None when there is nothing to compare with:
    the dashboard says "new"). Today alone is compared with yesterday up to the same hour
    (visitors, DAU and pageviews; new visitors get no change); `compare="year"`, against
    the same dates a year before. The numbers are summary()'s; `values`, the period's
    daily_values() when the caller has them already."""
    visits = any(metric in VISIT_METRICS for metric in metrics)
    now = summary(r, site, start, end, values)
    if visits:
        now.update(visit_totals(r, site, start, end))
    results = {
        metric: {"value": now[metric], **({"estimate": now["estimates"][metric]} if metric in now["estimates"] else {})}
        for metric in metrics
    }
    if compare in COMPARISONS:
        before_start, before_end = previous(compare, start, end)
        before = summary(r, site, before_start, before_end)
        if visits:
            before.update(visit_totals(r, site, before_start, before_end))
        if compare == "previous_period" and start == end == site.today():
            # Today so far against yesterday up to the same hour, where hours are kept.
            before.update(_yesterday_until_now(r, site))
            before["stickiness"] = _stickiness(before["dau"], before["mau"])  # (yesterday so far, as today)
        comparable = comparable_metrics(site, compare, start, end)
        for metric in metrics:
            results[metric]["change"] = percent_change(now[metric], before[metric]) if metric in comparable else None
    return results


def comparable_metrics(site: SiteInfo, compare: str | None, start: date, end: date) -> tuple[str, ...]:
    """The metrics a comparison can give a change for. Today is compared with yesterday up
    to the same hour, and only visitors, DAU, pageviews and stickiness are kept by the hour:
    new visitors and the visit metrics then have a null change that means "not comparable",
    not "new" (the dashboard tells them apart with this)."""
    if compare not in COMPARISONS:
        return ()
    if compare == "previous_period" and start == end == site.today():
        return tuple(m for m in AGGREGATE_METRICS if m not in ("new_visitors", *VISIT_METRICS))
    return AGGREGATE_METRICS


def previous(compare: str, start: date, end: date) -> tuple[date, date]:
    """The range a comparison sets against start..end: "previous_period", the same length
    just before; "year", the same dates a year earlier (29 February becomes the 28th)."""
    if compare == "previous_period":
        length = end - start
        return start - length - timedelta(days=1), start - timedelta(days=1)

    def year_before(day: date) -> date:
        try:
            return day.replace(year=day.year - 1)
        except ValueError:
            return day.replace(year=day.year - 1, day=28)

    return year_before(start), year_before(end)


def _yesterday_until_now(r: redis.Redis, site: SiteInfo) -> dict:
    """Yesterday's visitors (an estimate: the union of its hour HLLs) and pageviews (exact)
    from midnight up to this hour of the day, this hour included."""
    yesterday = site.today() - timedelta(days=1)
    hours = range(datetime.now(site.tz).hour + 1)
    pipe = r.pipeline(transaction=False)
    pipe.pfcount(*(keys.hour_visitors(site.id, yesterday, hour) for hour in hours))
    for hour in hours:
        pipe.get(keys.hour_pageviews(site.id, yesterday, hour))
    visitors, *views = pipe.execute()
    return {"visitors": visitors, "dau": visitors, "pageviews": sum(int(v or 0) for v in views)}


def _stickiness(dau, mau) -> float | None:
    return round(dau / mau, 4) if dau is not None and mau else None


def percent_change(now, before) -> float | None:
    """The change from `before` to `now` in percent, one decimal; None when `before` is
    zero or unknown (a change from nothing is not a percentage)."""
    if now is None or not before:
        return None
    return round(100 * (now - before) / before, 1)


def first_counted_day(site: SiteInfo) -> date:
    """The site's first day with stored numbers, or its creation day if that is earlier
    (or there are none): where "all time" starts. Imported history is older than the site."""
    created = Site.objects.filter(pk=site.id).values_list("created", flat=True).first()
    first = created.astimezone(site.tz).date() if created else site.today()
    counted = DailyMetrics.objects.filter(site_id=site.id).order_by("date").values_list("date", flat=True).first()
    return min(first, counted) if counted else first


def has_events(r: redis.Redis, site: SiteInfo) -> bool:
    """Has the site ever counted a visit? (Stored days; today's and yesterday's keys; or
    older days that events reached and no rollup has stored yet: a site whose history
    was imported or sent late is not "waiting for its first event".)"""
    if DailyMetrics.objects.filter(site_id=site.id, visitors__gt=0).exists():
        return True
    today = site.today()
    return bool(
        r.exists(
            keys.dirty_days(site.id), *(keys.site_visitors(site.id, day) for day in (today, today - timedelta(days=1)))
        )
    )
