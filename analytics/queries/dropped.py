"""The events a site did not count over a range, and why (analytics/dropped.py): so an
owner sees the bot filters and their own exclusions working, and which to switch off
if one misfires. A day's raw counts while its keys live; its rollup's row after."""

from datetime import date

import redis

from ..counts.days import dropped_days
from ..dropped import REASONS
from ..models import DailyMetrics
from ..periods import days_between
from ..sites import SiteInfo


def dropped(r: redis.Redis, site: SiteInfo, start: date, end: date) -> tuple[dict[str, int], list[dict]]:
    """({reason: events} over the days, every reason named; [{date, reason: events...}]
    for the days that dropped any)."""
    days = days_between(start, end)
    live = dropped_days(r, site.id, days)
    stored = dict(DailyMetrics.objects.filter(site_id=site.id, date__range=(start, end)).values_list("date", "dropped"))
    totals = dict.fromkeys(REASONS, 0)
    rows = []
    for day in days:
        # Each reason's larger count: the live hash while the day's keys last (the rollup's row
        # is a copy of it, never ahead), the row once they expired, and still the row where
        # late events made a new, partial hash past the expiry.
        kept = stored.get(day) or {}
        counts = {reason: max(n, live[day].get(reason, 0)) for reason, n in kept.items()} | {
            reason: n for reason, n in live[day].items() if reason not in kept
        }
        if not counts:
            continue
        for reason, n in counts.items():
            totals[reason] = totals.get(reason, 0) + n  # (a reason of a later version: still counted)
        rows.append({"date": day.isoformat(), **counts})
    return totals, rows
