"""Week and month unions: PFMERGE of the day HLLs of each ISO week and calendar month
(the site's, and each page's), stored as lasting keys and as PeriodVisitors rows."""
from datetime import date, timedelta

import redis

from ..counts.unions import range_visitors
from ..models import PeriodVisitors, Site
from ..periods import monday, month_start, period_days
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import Scratch
from .expiry import earliest_day


def merge_periods(r: redis.Redis, site: Site, info: SiteInfo, days: list[date], today: date, tmp: Scratch) -> list:
    """PFMERGE the day HLLs of each week and month the days fall in (site and pages), and
    store each period's visitors (exact bitmap unions for stable-salt sites)."""
    sid = info.id
    periods = sorted({("week", monday(d)) for d in days} | {("month", month_start(d)) for d in days})
    page_first = today - timedelta(days=site.keep_page_days - 1)
    ttl = site.keep_daily_days * 86400
    rows = []
    for unit, start in periods:
        span = period_days(unit, start)
        final = span[-1] < today
        present = [d for d in span if d <= today and d >= earliest_day(site, today)]
        if not present:
            continue
        pipe = r.pipeline(transaction=False)
        key = keys.period_visitors(sid, unit, start)
        pipe.pfmerge(key, *(keys.site_visitors(sid, d) for d in present))
        pipe.expire(key, ttl)
        pipe.pfcount(key)
        page_days = [d for d in present if d >= page_first]
        if page_days:
            pipe.sunion(*(keys.pages_index(sid, d) for d in page_days))
        answers = pipe.execute()
        if page_days:
            pipe = r.pipeline(transaction=False)
            for path in answers[3]:
                path = path.decode()
                page_key = keys.period_visitors(sid, unit, start, path)
                pipe.pfmerge(page_key, *(keys.page_visitors(sid, d, path) for d in page_days))
                pipe.expire(page_key, site.keep_page_days * 86400)
            pipe.execute()
        visitors = answers[2] if info.daily_salt else range_visitors(r, info, {start: present}, tmp)[start]
        rows.append(PeriodVisitors(site=site, unit=unit, start=start, visitors=visitors, final=final))
    PeriodVisitors.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["site", "unit", "start"],
        update_fields=["visitors", "final", "updated"],
    )
    return rows
