"""Dashboard server time for a 90-day period on a site with 100,000 daily visitors.

The site's closed days are rolled up (stored rows), as they are in production; the raw
keys a page view still reads (site and page HLLs for unions, page counters, today's
bitmaps) are there at full size: dense day HLLs, 300 pages a day (the top 50 dense), and
1,000,000-bit active/new bitmaps for the last 30 days (today's WAU/MAU are live).
Measured: the median server time of GET /dashboard/<domain>/?period=90d over 15 requests
(Django's test client, in process: no network), and of its parts; and the same page
filtered by a source (its visitors a third of the site's, a day bitmap of 1,000,000 bits
each day: every number of the page is then counted from bitmaps, none from stored rows).
"""

import random
import statistics
import time
from datetime import timedelta

from analytics.store import keys

DAYS = 180  # 90 shown + the 90 before, for the cards' changes
PAGES = 300
DAILY_VISITORS = 100_000
GOOGLE = "source\x1fGoogle"


def load(r, site, info, say):
    from analytics.models import DailyMetrics, PageDaily, PeriodVisitors, Retention
    from analytics.periods import month_start, period_days

    rng = random.Random(7)
    today = info.today()
    say(f"dashboard bench: loading {DAYS} days for a site with {DAILY_VISITORS:,} daily visitors")
    dense = f"bench:{{{site.pk}}}:dense"
    small = f"bench:{{{site.pk}}}:small"
    r.pfadd(dense, *(b"v%d" % n for n in range(30_000)))
    r.pfadd(small, *(b"v%d" % n for n in range(40)))
    dense_bytes, small_bytes = r.get(dense), r.get(small)
    bitmap = bytes(rng.getrandbits(8) & rng.getrandbits(8) for _ in range(125_000))
    google = bytes(b & rng.getrandbits(8) & rng.getrandbits(8) for b in bitmap)
    rows, cohorts, page_rows = [], [], []
    for offset in range(DAYS):
        day = today - timedelta(days=offset)
        pipe = r.pipeline(transaction=False)
        pipe.set(keys.site_visitors(site.pk, day), dense_bytes)
        pipe.set(keys.pageviews(site.pk, day), 300_000)
        paths = [f"/page/{n}" for n in range(PAGES)]
        pipe.sadd(keys.pages_index(site.pk, day), *paths)
        pipe.zadd(keys.page_search(site.pk), {p: 0 for p in paths})
        for n, path in enumerate(paths):
            pipe.set(keys.page_visitors(site.pk, day, path), dense_bytes if n < 50 else small_bytes)
            pipe.set(keys.page_pageviews(site.pk, day, path), int(100_000 / (n + 1)))
        pipe.set(keys.active(site.pk, day), bitmap)  # (a period's visitors: the OR of these)
        pipe.set(keys.new_visitors(site.pk, day), bitmap[:20_000])
        pipe.set(keys.dimension_bitmap(site.pk, day, GOOGLE), google)
        pipe.sadd(keys.dimension_bitmapped(site.pk, day), GOOGLE)
        pipe.sadd(keys.dimension_fields(site.pk, day), GOOGLE)
        pipe.execute()
        if offset:  # closed days: rolled up
            page_rows += [
                PageDaily(
                    site=site, date=day, path=p, visitors=DAILY_VISITORS // (n + 2), pageviews=int(100_000 / (n + 1))
                )
                for n, p in enumerate(paths)
            ]
            rows.append(
                DailyMetrics(
                    site=site,
                    date=day,
                    visitors=DAILY_VISITORS,
                    pageviews=300_000,
                    dau=DAILY_VISITORS,
                    new_visitors=30_000,
                    wau=450_000,
                    mau=1_000_000,
                    final=True,
                )
            )
            cohorts.append(
                Retention(
                    site=site,
                    unit="day",
                    cohort=day,
                    size=30_000,
                    retained=[30_000] + [rng.randrange(500, 3000) for _ in range(min(30, offset))],
                )
            )
    for w in range(1, 27):
        monday = today - timedelta(days=today.weekday(), weeks=w)
        cohorts.append(
            Retention(
                site=site,
                unit="week",
                cohort=monday,
                size=150_000,
                retained=[150_000] + [rng.randrange(5000, 20000) for _ in range(min(12, w))],
            )
        )
    # The rollups' merged week and month page HLLs of the closed periods.
    periods = []
    for unit in ("week", "month"):
        first = today - timedelta(days=DAYS - 1)
        start = first - timedelta(days=first.weekday()) if unit == "week" else month_start(first)
        while True:
            span = period_days(unit, start)
            if span[-1] >= today:
                break
            if span[0] >= first:
                periods.append(
                    PeriodVisitors(site=site, unit=unit, start=start, visitors=DAILY_VISITORS * 3, final=True)
                )
                pipe = r.pipeline(transaction=False)
                for n in range(PAGES):
                    pipe.set(
                        keys.period_visitors(site.pk, unit, start, f"/page/{n}"), dense_bytes if n < 50 else small_bytes
                    )
                pipe.execute()
            start = span[-1] + timedelta(days=1)
    DailyMetrics.objects.bulk_create(rows)
    Retention.objects.bulk_create(cohorts)
    PageDaily.objects.bulk_create(page_rows, batch_size=2000)
    PeriodVisitors.objects.bulk_create(periods)
    r.unlink(dense, small)


def run(r, site, say) -> list[tuple]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from analytics import queries
    from analytics.sites import SiteInfo
    from dashboard import periods

    info = SiteInfo.from_model(site)
    load(r, site, info, say)
    user, _ = get_user_model().objects.get_or_create(
        username="bench-admin", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    url = f"/dashboard/{site.domain}/?period=90d"
    assert client.get(url).status_code == 200
    period = periods.parse({"period": "90d"}, info.today())

    def part(fn, n=7):
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    def page(address):
        assert client.get(address).status_code == 200

    whole = part(lambda: page(url), 15)

    values = queries.daily_values(r, info, period.start, period.end)
    parts = {
        "daily values (rows + today live)": part(lambda: queries.daily_values(r, info, period.start, period.end)),
        "summary (90-day union of activity bitmaps)": part(
            lambda: queries.summary(r, info, period.start, period.end, values)
        ),
        "top pages": part(lambda: queries.top_pages(r, info, period.start, period.end, 10)),
        "retention (rows)": part(
            lambda: queries.retention(r, info, "day", period.end - timedelta(days=29), period.end, 30)
        ),
    }
    rows = [(f"GET {url} (median of 15)", f"{whole * 1000:,.0f}")]
    rows += [(f"  part: {name}", f"{seconds * 1000:,.1f}") for name, seconds in parts.items()]
    filtered_url = url + "&filters=source%3D%3DGoogle"
    whole = part(lambda: page(filtered_url), 5)
    filters = queries.segments.parse("source==Google")
    parts = {
        "summary (segments of 90 days, their union)": part(
            lambda: queries.filtered.summary(r, info, filters, period.start, period.end)
        ),
        "daily values with WAU/MAU (120 day segments)": part(
            lambda: queries.filtered.daily_values(r, info, filters, period.start, period.end)
        ),
    }
    rows.append((f"GET {filtered_url} (median of 5)", f"{whole * 1000:,.0f}"))
    rows += [(f"  part: {name}", f"{seconds * 1000:,.1f}") for name, seconds in parts.items()]
    return rows
