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

A day rolled up after its policy has passed (history imported, events sent late: any day
from 2000 on is accepted) keeps its keys BACKFILL_GRACE_HOURS after that rollup, so the
rest of an import adds to it exactly. Each row records when its day's keys expire
(DailyMetrics.keys_until, page_keys_until): once they have, the day is sealed, its rows
are the record, readers take its numbers from them (queries/stored.py), ingest refuses
events for it, and a page family sealed while the rest lives is merged, not rewritten
(merge_sealed_pages()).

A day with visit values that keep no HLL (their bitmap stands in for it: counts/fold.py)
keeps its bitmaps until the nightly rollup has folded those values into HLLs, when they
are due (fold_due()): a rollup that does not run leaves the bitmaps in Redis, never the
values without visitors.
"""

import secrets
from datetime import UTC, date, datetime, timedelta
from typing import cast

import redis
from django.conf import settings
from django.db import transaction

from ..counts import fold
from ..models import DailyMetrics, PageDaily, Site
from ..periods import day_number, monday, month_start, period_days, policy_expiry
from ..sites import sealed_days
from ..store import keys
from ..store.scripts import EXPIRE_DAY, MERGE_PAGES
from .sketching import SKETCH_AHEAD, sketch

MAX_LOOKBACK_DAYS = 800


def earliest_day(site: Site, today: date) -> date:
    """The oldest day whose raw keys are surely still there."""
    return today - timedelta(days=site.keep_daily_days - 1)


def grace() -> timedelta:
    return timedelta(hours=settings.BACKFILL_GRACE_HOURS)


def _at(moment: datetime) -> int:
    return int(moment.timestamp())


def sealed(until: datetime | None, now: datetime) -> bool:
    """Have a day's keys of a family expired after its rollup (`until`, as recorded)?"""
    return until is not None and until <= now


def apply(r: redis.Redis, site: Site, days: list[date], now: datetime | None = None):
    """Set the policy's EXPIREAT on the raw keys of these (final) days, and record it on
    their rows. A day the policy has passed already (rolled up late: history imported,
    events sent late) keeps its keys BACKFILL_GRACE_HOURS after its rollup, so that the
    rest of an import still adds to it exactly; a family whose keys have expired stays
    expired (its rows are the record from then on)."""
    now = now or datetime.now(UTC)
    sid = site.pk
    rows = {row.date: row for row in DailyMetrics.objects.filter(site=site, date__in=days)}
    changed = []
    for start in range(0, len(days), 31):
        chunk = days[start : start + 31]
        calls, merging = [], []
        due: dict[date, set[str]] = {}
        for day in chunk:
            row = rows.get(day)
            rolled = row.updated if row is not None else now
            daily_until = _until(row.keys_until if row else None, _wanted(day, site.keep_daily_days, rolled), now)
            page_until = _until(row.page_keys_until if row else None, _wanted(day, site.keep_page_days, rolled), now)
            segment_until = min(
                daily_until,
                _until(row.segment_keys_until if row else None, _wanted(day, site.keep_segment_days, rolled), now),
            )
            # (keys of a family sealed before now came after it was: late events, which the
            # next rollup merges (pages) or which could not be refused in time; they get the
            # grace, not an expiry in the past that would drop them uncounted)
            late = [
                row is not None and sealed(recorded, now)
                for recorded in (row.keys_until if row else None, row.page_keys_until if row else None)
            ]
            if row is not None:  # (families whose keys go within SKETCH_AHEAD: their HLLs kept first)
                families = {
                    family
                    for family, done, gone, until in (
                        ("daily", row.daily_sketched, late[0], daily_until),
                        ("pages", row.pages_sketched, late[1], page_until),
                    )
                    if not done and not gone and until <= now + SKETCH_AHEAD
                }
                if families:
                    due[day] = families
            if row is not None and (row.keys_until, row.page_keys_until, row.segment_keys_until) != (
                daily_until,
                page_until,
                segment_until,
            ):
                # (page keys whose expiry moved, a policy lowered since, may now go before their
                # periods' final rollup; their first expiry's case is merge_periods()')
                if row.page_keys_until not in (None, page_until) and not late[1] and periods_first(day, page_until):
                    merging.append((day, page_until))
                row.keys_until, row.page_keys_until, row.segment_keys_until = daily_until, page_until, segment_until
                changed.append(row)
            daily_at, page_at = (
                _at(max(until, now + grace()) if was else until) for until, was in zip((daily_until, page_until), late)
            )
            # (values whose bitmap stands in for their HLL keep their bitmaps until folded: fold_due())
            segment_first = "1" if segment_until < daily_until else "0"
            calls.append(
                (
                    [
                        keys.site_prefix(sid),
                        keys.dimensions_prefix(sid),
                        keys.fold_due(sid),
                        *keys.daily_family(sid, day),
                    ],
                    [day.isoformat(), daily_at, page_at, _at(segment_until), segment_first, day_number(day)],
                )
            )
        sketch(r, site, due)  # (before the expiries are set: an expiry in the past drops the keys at once)
        _merge_before_expiry(r, site, merging)
        EXPIRE_DAY.run_many(r, calls)
    DailyMetrics.objects.bulk_update(changed, ["keys_until", "page_keys_until", "segment_keys_until"], batch_size=500)


PERIOD_SLACK = timedelta(days=7)  # (nights a period's final rollup may come late)


def periods_first(day: date, page_until: datetime) -> list[tuple[str, date]]:
    """The week and month of a day whose final rollup comes after its page keys go (a
    keep_page_days shorter than the period, or lowered since): rollups/periods.py merges a
    period once it has ended, too late for those."""
    return [
        (unit, start)
        for unit, start in (("week", monday(day)), ("month", month_start(day)))
        if page_until <= policy_expiry(period_days(unit, start)[-1], 0) + PERIOD_SLACK
    ]


def _merge_before_expiry(r: redis.Redis, site: Site, merging: list[tuple[date, datetime]]):
    """PFMERGE these days' page HLLs into the week and month keys periods_first() names."""
    if not merging:
        return
    pipe = r.pipeline(transaction=False)
    for day, _ in merging:
        pipe.smembers(keys.pages_index(site.pk, day))
    listed = pipe.execute()
    pipe = r.pipeline(transaction=False)
    for (day, page_until), pages in zip(merging, listed):
        for unit, start in periods_first(day, page_until):
            until = period_expiry(site, unit, start)
            for path in cast(set[bytes], pages):
                period_key = keys.period_visitors(site.pk, unit, start, path.decode())
                pipe.pfmerge(period_key, keys.page_visitors(site.pk, day, path.decode()))
                pipe.expireat(period_key, until)
    pipe.execute()


def period_expiry(site: Site, unit: str, start: date) -> int:
    """When a week's or month's page HLLs go: keep_page_period_days after the period's last
    day (a period ended long before, of imported history: the grace after now)."""
    until = policy_expiry(period_days(unit, start)[-1], site.keep_page_period_days)
    return _at(max(until, datetime.now(UTC) + grace()))


def _wanted(day: date, keep_days: int, rolled: datetime) -> datetime:
    """When the policy lets a family's keys of a day go, for a day last rolled up at
    `rolled`: keep_days after the day, or the grace after a rollup that came later."""
    policy = policy_expiry(day, keep_days)
    return max(policy, rolled + grace()) if rolled >= policy else policy


def _until(recorded: datetime | None, wanted: datetime, now: datetime) -> datetime:
    """A family's expiry: as the policy wants it, unless it has expired already."""
    return cast(datetime, recorded) if sealed(recorded, now) else wanted  # (sealed() is False for None)


def _expire_segments(pipe, sid: int, day: date, bitmapped, at: int):
    """Queue the day's visitor bitmaps' expiry (pages' and events' too: filters on older
    days are estimated), on a pipeline."""
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
    due = [
        date.fromisoformat(d.decode())
        for d in cast(list[bytes], r.zrangebyscore(keys.fold_due(sid), "-inf", day_number(last)))
    ]
    segment_at = min(site.keep_segment_days, site.keep_daily_days)
    rolled = dict(DailyMetrics.objects.filter(site=site, date__in=due).values_list("date", "updated"))
    folded = 0
    for day in due:
        folded += fold.fold(r, sid, day, sorted(fold.bitmap_only(r, sid, [day])[day]))
        bitmapped = r.smembers(keys.dimension_bitmapped(sid, day))
        pipe = r.pipeline(transaction=False)
        pipe.unlink(keys.dimension_bitmap_only(sid, day), keys.dimension_folding(sid, day))
        _expire_segments(
            pipe, sid, day, bitmapped, _at(_wanted(day, segment_at, rolled.get(day, datetime.min.replace(tzinfo=UTC))))
        )
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
    forget_epochs(r, site)
    return len(days)


def forget_epochs(r: redis.Redis, site: Site):
    """The closed-day counters (keys.closed_epochs) of sealed days: no write reaches those
    days, so the kept parts' tokens leave their counters out (queries/kept.py)."""
    key = keys.closed_epochs(site.pk)
    days = [date.fromisoformat(field.decode()) for field in cast(list[bytes], r.hkeys(key))]
    if gone := sealed_days(site, days):
        r.hdel(key, *(day.isoformat() for day in gone))


def merge_sealed_pages(r: redis.Redis, site: Site, days: list[date], attempts: int = 20):
    """Add the page keys of sealed days (their page keys expired after their rollup; new
    events came since) to the stored page rows, instead of rewriting the rows with them:
    the keys move into a staging hash in one atomic step with their deletion
    (merge_pages.lua), the rows add the hash in a database transaction that records its
    token on the day's row, and the hash goes. A crash between the last two leaves the
    hash, whose token the row already has: it is dropped, not added twice. Each page's
    visitors are added too (a visitor of both halves of the day counts twice: its
    visitors are then at most its pageviews, an estimate); the page's week and month
    HLLs get its new visitors."""
    sid = site.pk
    for day in days:
        for _ in range(attempts):
            paths = sorted(p.decode() for p in cast(set[bytes], r.smembers(keys.pages_index(sid, day))))
            staging = keys.page_merge(sid, day)
            if not paths and not r.exists(staging):
                break
            pipe = r.pipeline(transaction=False)
            for path in paths:
                for unit, start in (("week", monday(day)), ("month", month_start(day))):
                    pipe.pfmerge(keys.period_visitors(sid, unit, start, path), keys.page_visitors(sid, day, path))
                    pipe.expireat(keys.period_visitors(sid, unit, start, path), period_expiry(site, unit, start))
            pipe.execute()
            page_keys = [
                k for path in paths for k in (keys.page_pageviews(sid, day, path), keys.page_visitors(sid, day, path))
            ]
            moved = MERGE_PAGES.run(
                r, [keys.pages_index(sid, day), staging, *page_keys], [secrets.token_hex(8), *paths]
            )
            if moved is None:
                continue  # (events came between the read and the move: read again)
            _add_staged(site, day, dict(zip(moved[::2], moved[1::2])))
            r.unlink(staging)
            break
        else:
            raise RuntimeError(f"site {sid}, {day}: its page keys kept changing; the next rollup merges them")


def _add_staged(site: Site, day: date, staged: dict[bytes, bytes]):
    token = staged.pop(b"\0token").decode()
    with transaction.atomic():
        # (one UPDATE both claims the hash and says whether it was added before: a crash
        # kept it, or another rollup is adding it; the second waits for the first's commit)
        if (
            not DailyMetrics.objects.filter(site=site, date=day)
            .exclude(page_merge_token=token)
            .update(page_merge_token=token)
        ):
            return
        existing = {
            p.path: p for p in PageDaily.objects.filter(site=site, date=day, path__in=[k.decode() for k in staged])
        }
        new, changed = [], []
        for raw, value in staged.items():
            path, (views, people) = raw.decode(), (int(n) for n in value.split())
            page = existing.get(path)
            if page is None:
                new.append(PageDaily(site=site, date=day, path=path, visitors=min(people, views), pageviews=views))
            else:
                page.pageviews += views
                page.visitors = min(page.visitors + people, page.pageviews)
                changed.append(page)
        PageDaily.objects.bulk_create(new, batch_size=500)
        PageDaily.objects.bulk_update(changed, ["visitors", "pageviews"], batch_size=500)
