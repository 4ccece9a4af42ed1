"""A day or two by the hour: visitors and pageviews per local hour, for Today/Yesterday.

Ingest keeps, per local hour of a day, an HLL of the hour's visitors and a pageview
counter (record_batch.lua). Pageviews are exact; an hour's visitors are an estimate, never
shown above the day's exact DAU. On a day the clocks go back, the repeated hour's two
halves share one row (its wall-clock hour).

The hour keys are raw day keys: they expire with the day's others (keep_daily_days after
the rollup, analytics.rollups.expiry), all of a day's at once, while the day's own numbers
stay in the rollup rows. The same dates last year (compare=year) may be past that: a day
older than the policy keeps, with none of its hour keys left, is unknown (null), not a day
without visitors; unless its final row says it had none (0 visitors, 0 pageviews): then
every hour had none too, and is 0.
"""

from datetime import UTC, date, datetime, timedelta

import redis

from ..models import DailyMetrics
from ..periods import days_between
from ..sites import SiteInfo
from ..store import keys

HOUR_METRICS = ("visitors", "pageviews")
MAX_HOUR_DAYS = 2


def hourly(r: redis.Redis, site: SiteInfo, start: date, end: date, metrics=HOUR_METRICS) -> list[dict]:
    """24 rows a day, dated `YYYY-MM-DDTHH:00` in the site's time zone, zeros included; an
    hour still to come has null numbers (nothing happened yet: a chart draws a gap), and so
    has every hour of a day whose hour keys have expired (nothing is known of it), but
    one whose stored final row is all zeros."""
    sid = site.id
    days = days_between(start, end)
    kept_from = site.oldest_day()  # (the days before may have lost their raw keys)
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.bitcount(keys.active(sid, day))
        for hour in range(24):
            pipe.pfcount(keys.hour_visitors(sid, day, hour))
            pipe.get(keys.hour_pageviews(sid, day, hour))
        if day < kept_from:  # (one EXISTS: a day's hour keys share a slot, and expire together)
            pipe.exists(*(f(sid, day, hour) for hour in range(24) for f in (keys.hour_visitors, keys.hour_pageviews)))
    answers = iter(pipe.execute())
    counted = {}
    for day in days:
        dau = next(answers)
        hours = [{"visitors": min(next(answers), dau), "pageviews": int(next(answers) or 0)} for _ in range(24)]
        counted[day] = (hours, day < kept_from and not next(answers))
    gone = [day for day, (_, expired) in counted.items() if expired]
    quiet = (
        set(
            DailyMetrics.objects.filter(site_id=sid, final=True, date__in=gone, visitors=0, pageviews=0).values_list(
                "date", flat=True
            )
        )
        if gone
        else set()
    )
    now = datetime.now(site.tz).strftime("%Y-%m-%dT%H:00")
    rows = []
    for day, (hours, expired) in counted.items():
        unknown = expired and day not in quiet  # (a quiet day's hours are the zeros its missing keys read as)
        for hour, values in enumerate(hours):
            stamp = f"{day.isoformat()}T{hour:02d}:00"
            rows.append({"date": stamp, **{m: values[m] if stamp <= now and not unknown else None for m in metrics}})
    return rows


def visitors_until(r: redis.Redis, site: SiteInfo, day: date, hour: int) -> int | None:
    """A day's distinct visitors from midnight to the end of local `hour` (the union of its
    hour HLLs), or None where the day's hour keys are gone (nothing is known of it)."""
    names = [keys.hour_visitors(site.id, day, h) for h in range(hour + 1)]
    pipe = r.pipeline(transaction=False)
    pipe.pfcount(*names)
    pipe.exists(*names, *(keys.hour_pageviews(site.id, day, h) for h in range(hour + 1)))
    count, found = pipe.execute()
    if not found and day < site.oldest_day():
        return None
    return int(count)


def last_24_hours(r: redis.Redis, site: SiteInfo, now: datetime) -> tuple[int, list[int]]:
    """The distinct visitors of the last 24 local hours, this one included (the union of
    their hour HLLs), and each hour's, oldest first (the sites list's number and sparkline)."""
    hour = now.astimezone(site.tz).replace(minute=0, second=0, microsecond=0).astimezone(UTC)
    names = []
    for back in range(23, -1, -1):  # (in UTC, then local: a day the clocks change has 23 or 25 hours)
        at = (hour - timedelta(hours=back)).astimezone(site.tz)
        names.append(keys.hour_visitors(site.id, at.date(), at.hour))
    pipe = r.pipeline(transaction=False)
    pipe.pfcount(*names)
    for name in names:
        pipe.pfcount(name)
    total, *hours = pipe.execute()
    return int(total), [int(n) for n in hours]
