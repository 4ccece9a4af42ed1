"""Week unions of the activity bitmaps: BITOP OR of a week's active (and new-visitor)
bitmaps into lasting week keys, which week retention cohorts are counted against."""

from datetime import UTC, date, datetime, timedelta

import redis

from ..models import Site
from ..periods import policy_expiry
from ..store import keys
from ..store.scratch import queue_union
from .expiry import grace


def week_unions(r: redis.Redis, site: Site, weeks: list[date], today: date):
    """OR each week's active and new-visitor bitmaps into lasting week keys."""
    if not weeks:
        return
    sid = site.pk
    now = datetime.now(UTC)
    pipe = r.pipeline(transaction=False)
    for week in weeks:
        week_days = [week + timedelta(days=n) for n in range(7) if week + timedelta(days=n) <= today]
        # (as long as the week's last day keeps its keys, or the grace of a late rollup: expiry.py)
        until = max(policy_expiry(week + timedelta(days=6), site.keep_daily_days), now + grace())
        ttl_ms = int((until - now).total_seconds() * 1000)
        queue_union(pipe, keys.active_week(sid, week), [keys.active(sid, d) for d in week_days], ttl_ms)
        queue_union(pipe, keys.new_week(sid, week), [keys.new_visitors(sid, d) for d in week_days], ttl_ms)
    pipe.execute()
