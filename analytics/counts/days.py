"""A day's numbers from its raw keys: visitors, pageviews, DAU, new visitors, WAU, MAU; and
the events it did not count, by reason."""

from datetime import date, timedelta

import redis

from ..dropped import USER_AGENT
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import Scratch, queue_union


def day_metrics(
    r: redis.Redis, site: SiteInfo, days: list[date], tmp: Scratch, windows: bool = True
) -> dict[date, dict]:
    """Visitors, pageviews, DAU, new visitors, and (with `windows`) WAU and MAU of each
    day, straight from the raw keys: one round trip. WAU and MAU are exact unions of the
    active bitmaps; on daily-salt sites, whose visitors get new ids every day, estimates
    (HLL unions of the days' visitors, as for visitors over a range)."""
    sid = site.id
    pipe = r.pipeline(transaction=False)
    wanted = []  # (day, metric, position of its answer)
    for day in days:
        for metric, command, key in (
            ("visitors", pipe.pfcount, keys.site_visitors(sid, day)),
            ("pageviews", pipe.get, keys.pageviews(sid, day)),
            ("dau", pipe.bitcount, keys.active(sid, day)),
            ("new_visitors", pipe.bitcount, keys.new_visitors(sid, day)),
        ):
            wanted.append((day, metric, len(pipe)))
            command(key)
        for metric, window in (("wau", 7), ("mau", 30)) if windows else ():
            window_days = [day - timedelta(days=n) for n in range(window)]
            if site.daily_salt:  # (a visitor's id is the day's own: an OR of days would mix people up)
                wanted.append((day, metric, len(pipe)))
                pipe.pfcount(*(keys.site_visitors(sid, d) for d in window_days))
                continue
            dest = tmp.key(f"{metric}:{day.isoformat()}")
            queue_union(pipe, dest, [keys.active(sid, d) for d in window_days])
            wanted.append((day, metric, len(pipe)))
            pipe.bitcount(dest)
            pipe.unlink(dest)
    answers = pipe.execute()
    result: dict[date, dict] = {day: {} for day in days}
    for day, metric, position in wanted:
        result[day][metric] = int(answers[position] or 0)
    for row in result.values():
        if site.daily_salt:
            row["new_visitors"] = None
            row["visitors"] = max(row["visitors"], row["dau"])  # an estimate, never below the exact count
            for metric in ("wau", "mau"):
                if metric in row:  # (HLL unions of the days' visitors: a person back on another day counts again)
                    row[metric] = max(row[metric], row["dau"])
        else:
            row["visitors"] = row["dau"]  # the day's visitors, exactly: its active bitmap
    return result


def dropped_days(r: redis.Redis, site_id: int, days: list[date]) -> dict[date, dict[str, int]]:
    """Each day's events not counted, by reason (analytics/dropped.py), from its raw keys:
    one round trip. A day from before reasons were kept has its bots' counter, read as
    dropped by their User-Agent. Days whose keys are gone (or that dropped nothing): {}."""
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.hgetall(keys.dropped(site_id, day))
        pipe.get(keys.bots_dropped(site_id, day))
    answers = pipe.execute()
    result = {}
    for day, counts, bots in zip(days, answers[::2], answers[1::2]):
        row = {reason.decode(): int(n) for reason, n in counts.items()}
        if bots:
            row[USER_AGENT] = row.get(USER_AGENT, 0) + int(bots)
        result[day] = row
    return result
