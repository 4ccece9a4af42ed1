"""A day or two by the hour: visitors and pageviews per local hour, for Today/Yesterday.

Ingest keeps, per local hour of a day, an HLL of the hour's visitors and a pageview
counter (record_batch.lua). Pageviews are exact; an hour's visitors are an estimate, never
shown above the day's exact DAU. On a day the clocks go back, the repeated hour's two
halves share one row (its wall-clock hour).
"""
from datetime import date, datetime

import redis

from ..periods import days_between
from ..sites import SiteInfo
from ..store import keys

HOUR_METRICS = ("visitors", "pageviews")
MAX_HOUR_DAYS = 2


def hourly(r: redis.Redis, site: SiteInfo, start: date, end: date, metrics=HOUR_METRICS) -> list[dict]:
    """24 rows a day, dated `YYYY-MM-DDTHH:00` in the site's time zone, zeros included; an
    hour still to come has null numbers (nothing happened yet: a chart draws a gap)."""
    sid = site.id
    days = days_between(start, end)
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.bitcount(keys.active(sid, day))
        for hour in range(24):
            pipe.pfcount(keys.hour_visitors(sid, day, hour))
            pipe.get(keys.hour_pageviews(sid, day, hour))
    answers = iter(pipe.execute())
    now = datetime.now(site.tz).strftime("%Y-%m-%dT%H:00")
    rows = []
    for day in days:
        dau = next(answers)
        for hour in range(24):
            values = {"visitors": min(next(answers), dau), "pageviews": int(next(answers) or 0)}
            stamp = f"{day.isoformat()}T{hour:02d}:00"
            rows.append({"date": stamp, **{m: values[m] if stamp <= now else None for m in metrics}})
    return rows
