"""The key expiry policy: how long raw keys live, set per site in the admin.

A day's raw keys get their expiry only once the day is final, i.e. once its rollup rows
are stored (rollups.rollup() calls `apply` for the days it finalised), so expiry never
removes numbers that were not rolled up. The daily beat job re-applies the policy to every
final day still in Redis, so a changed setting reaches old keys too. Realtime minute keys
get their short TTL at ingest.

Families: "daily" (active and new-visitor bitmaps, site HLL, pageview total, custom
events, bot count, the visit dimensions' tables, value sets and HLLs) keep
`keep_daily_days`; the per-value visitor bitmaps of exact filters (pages' and events'
included) keep `keep_segment_days`, at most as long; "page" (page HLLs and counters, the day's page
index) keep `keep_page_days`.

A day with visit values that keep no HLL (their bitmap stands in for it: counts/fold.py)
keeps its bitmaps until the nightly rollup has folded those values into HLLs, when they
are due (fold_due()): a rollup that does not run leaves the bitmaps in Redis, never the
values without visitors.
"""
from datetime import UTC, date, datetime, time, timedelta

import redis

from ..counts import fold
from ..models import DailyMetrics, Site
from ..periods import day_number
from ..store import keys

MAX_LOOKBACK_DAYS = 800


def earliest_day(site: Site, today: date) -> date:
    """The oldest day whose raw keys are surely still there."""
    return today - timedelta(days=site.keep_daily_days - 1)


def _expire_at(day: date, keep_days: int) -> int:
    return int(datetime.combine(day + timedelta(days=keep_days + 1), time(), tzinfo=UTC).timestamp())


def apply(r: redis.Redis, site: Site, days: list[date]):
    """Set the policy's EXPIREAT on the raw keys of these (final) days."""
    sid = site.pk
    for start in range(0, len(days), 31):
        chunk = days[start : start + 31]
        pipe = r.pipeline(transaction=False)
        for day in chunk:
            pipe.smembers(keys.pages_index(sid, day))
            pipe.smembers(keys.events_index(sid, day))
            pipe.smembers(keys.props_index(sid, day))
            pipe.smembers(keys.dimension_fields(sid, day))
            pipe.smembers(keys.dimension_bitmapped(sid, day))
            pipe.exists(keys.dimension_bitmap_only(sid, day), keys.dimension_folding(sid, day))
        listed = iter(pipe.execute())
        pipe = r.pipeline(transaction=False)
        for day in chunk:
            pages, events, props = next(listed), next(listed), next(listed)
            daily_at, page_at = _expire_at(day, site.keep_daily_days), _expire_at(day, site.keep_page_days)
            for key in keys.daily_family(sid, day):
                pipe.expireat(key, daily_at)
            for name in events:
                name = name.decode()
                pipe.expireat(keys.event_count(sid, day, name), daily_at)
                pipe.expireat(keys.event_visitors(sid, day, name), daily_at)
            for group in props:
                group = group.decode()
                pipe.expireat(keys.prop_count(sid, day, group), daily_at)
                pipe.expireat(keys.prop_visitors(sid, day, group), daily_at)
            pipe.expireat(keys.pages_index(sid, day), page_at)
            for path in pages:
                path = path.decode()
                pipe.expireat(keys.page_visitors(sid, day, path), page_at)
                pipe.expireat(keys.page_pageviews(sid, day, path), page_at)
            for key in (keys.dimension_counts(sid, day), keys.dimension_fields(sid, day), keys.dimension_sizes(sid, day)):
                pipe.expireat(key, daily_at)
            for field in next(listed):
                pipe.expireat(keys.dimension_visitors(sid, day, field.decode()), daily_at)
            bitmapped, unfolded = next(listed), next(listed)
            for key in (keys.dimension_bitmap_only(sid, day), keys.dimension_folding(sid, day)):
                pipe.expireat(key, daily_at)
            if unfolded and site.keep_segment_days < site.keep_daily_days:  # (kept until folded: fold_due())
                _expire_segments(pipe, sid, day, bitmapped, daily_at)
                pipe.zadd(keys.fold_due(sid), {day.isoformat(): day_number(day)})
            else:
                _expire_segments(pipe, sid, day, bitmapped, _expire_at(day, min(site.keep_segment_days, site.keep_daily_days)))
        pipe.execute()


def _expire_segments(pipe, sid: int, day: date, bitmapped, at: int):
    """Queue the day's visitor bitmaps' expiry (pages' and events' too: filters on older
    days are estimated)."""
    for key in (keys.dimension_bitmapped(sid, day), keys.dimension_bitmap_sizes(sid, day)):
        pipe.expireat(key, at)
    for field in bitmapped:
        pipe.expireat(keys.dimension_bitmap(sid, day, field.decode()), at)


def fold_due(r: redis.Redis, site: Site, today: date) -> int:
    """Fold the visit values of the days whose bitmaps are due to expire (older than
    keep_segment_days) into their HLLs, then let the bitmaps expire as the policy says.
    Returns the values folded."""
    sid = site.pk
    last = today - timedelta(days=site.keep_segment_days)
    due = [date.fromisoformat(d.decode()) for d in r.zrangebyscore(keys.fold_due(sid), "-inf", day_number(last))]
    segment_at = min(site.keep_segment_days, site.keep_daily_days)
    folded = 0
    for day in due:
        folded += fold.fold(r, sid, day, sorted(fold.bitmap_only(r, sid, [day])[day]))
        bitmapped = r.smembers(keys.dimension_bitmapped(sid, day))
        pipe = r.pipeline(transaction=False)
        pipe.unlink(keys.dimension_bitmap_only(sid, day), keys.dimension_folding(sid, day))
        _expire_segments(pipe, sid, day, bitmapped, _expire_at(day, segment_at))
        pipe.zrem(keys.fold_due(sid), day.isoformat())
        pipe.execute()
    return folded


def apply_all(r: redis.Redis, site: Site, today: date) -> int:
    """Re-apply the policy to every final day of the last MAX_LOOKBACK_DAYS."""
    days = list(
        DailyMetrics.objects.filter(site=site, final=True, date__gte=today - timedelta(days=MAX_LOOKBACK_DAYS))
        .order_by("date")
        .values_list("date", flat=True)
    )
    apply(r, site, days)
    fold_due(r, site, today)
    return len(days)
