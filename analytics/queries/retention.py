"""Retention cohorts as the API and dashboard show them: stored rows where the rollups
made them, counted live (analytics.counts.cohorts) otherwise."""

from datetime import date, timedelta

import redis

from ..counts.cohorts import retention as live_retention
from ..models import Retention
from ..periods import days_between, monday
from ..sites import SiteInfo
from ..store.scratch import scratch


def retention(r: redis.Redis, site: SiteInfo, unit: str, start: date, end: date, periods: int) -> list[dict]:
    """Cohorts starting start..end (days, or the ISO weeks touching the range): stored
    rows where the rollups made them, live from Redis otherwise; retained[n] for n up to
    `periods`, and only for periods that have begun. Today's and yesterday's cohorts (this
    week's) are always live: they are still growing, and a row up to five minutes old would
    disagree with the live cards beside it."""
    if unit == "day":
        cohorts = days_between(start, end)
        last = site.today()
        live_from = last - timedelta(days=1)
    else:
        cohorts = sorted({monday(day) for day in days_between(start, end)})
        last = live_from = monday(site.today())
    cohorts = [c for c in cohorts if c <= last]
    rows = {
        row.cohort: (row.size, row.retained)
        for row in Retention.objects.filter(site_id=site.id, unit=unit, cohort__in=cohorts, cohort__lt=live_from)
    }
    missing = [c for c in cohorts if c not in rows]
    if missing:
        with scratch(r, site.id) as tmp:
            for cohort, size, retained in live_retention(r, site, unit, missing, last, tmp, live=True):
                rows[cohort] = (size, retained)
    return [{"cohort": c.isoformat(), "size": rows[c][0], "retained": rows[c][1][: periods + 1]} for c in cohorts]
