"""What a site's keys cost in Redis memory, per key family (shown in the admin beside the
expiry policy, so an operator sees what a longer retention would cost)."""

from datetime import UTC, datetime, timedelta
from typing import cast

import redis

from . import dimensions
from .sites import SiteInfo
from .store import idmap, keys

MAX_PAGES_MEASURED = 2000  # beyond this, the measured pages' average stands for the rest


def _usage(r: redis.Redis, names: list[str]) -> tuple[int, int]:
    """(keys that exist, bytes) for these key names."""
    if not names:
        return 0, 0
    pipe = r.pipeline(transaction=False)
    for name in names:
        pipe.memory_usage(name)
    sizes = [size for size in pipe.execute() if size is not None]
    return len(sizes), sum(sizes)


def memory_today(r: redis.Redis, site: SiteInfo) -> dict[str, tuple[int, int]]:
    """{family: (keys, bytes)} for today's keys of each expiry family, plus the lasting
    visitor-id map."""
    sid, today = site.id, site.today()
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    minutes = [keys.realtime(sid, now - timedelta(minutes=n)) for n in range(site.realtime_ttl // 60)]
    # (casts: the client does not decode, so members are bytes; SRANDMEMBER with a count answers a list)
    paths = [
        p.decode() for p in cast(list[bytes], r.srandmember(keys.pages_index(sid, today), MAX_PAGES_MEASURED) or [])
    ]
    total_pages = r.scard(keys.pages_index(sid, today))
    page_keys = [keys.page_visitors(sid, today, p) for p in paths] + [keys.page_pageviews(sid, today, p) for p in paths]
    count, size = _plus(
        _sampled(r, page_keys, total_pages / len(paths) if paths else 1), _usage(r, [keys.pages_index(sid, today)])
    )
    daily = keys.daily_family(sid, today)
    value_keys = [
        keys.dimension_visitors(sid, today, field.decode())
        for field in cast(set[bytes], r.smembers(keys.dimension_fields(sid, today)))
    ]
    bitmaps = [
        keys.dimension_bitmap(sid, today, field.decode())
        for field in cast(set[bytes], r.smembers(keys.dimension_bitmapped(sid, today)))
    ]
    tables = [keys.dimension_counts(sid, today)]
    sets = [keys.dimension_fields(sid, today), keys.dimension_sizes(sid, today)]
    generation = int(datetime.now(UTC).timestamp()) // dimensions.VISIT_TIMEOUT
    return {
        "visit dimensions (tables, value sets)": _usage(r, tables + sets),
        "visit dimensions (visitors per value, HLLs)": _usage(r, value_keys),
        "filter bitmaps (per value, for exact filters)": _plus(
            _usage(r, bitmaps),
            _usage(
                r,
                [
                    keys.dimension_bitmapped(sid, today),
                    keys.dimension_bitmap_sizes(sid, today),
                    keys.dimension_bitmap_only(sid, today),
                    keys.dimension_folding(sid, today),
                ],
            ),
        ),
        "open visits (sessions, their parts)": _usage(
            r,
            [keys.sessions(sid, g) for g in (generation, generation - 1)]
            + [keys.session_parts(sid, g) for g in (generation, generation - 1)],
        ),
        "realtime minutes": _usage(r, minutes),
        "daily pages": (count, size),
        "daily bitmaps and site HLL": _usage(r, daily),
        "visitor ids and first days (kept)": _id_map_usage(r, sid),
    }


MAX_BUCKETS_MEASURED = 2000  # id-map buckets measured (evenly spread); the rest scaled from them


def _id_map_usage(r: redis.Redis, sid: int) -> tuple[int, int]:
    """The visitor-id map: its buckets (a big site has hundreds of thousands: a sample of
    them, scaled), the map of before, the counter, and the first days seen (runs of ids,
    and the ids a backfill moved: sampled like the buckets)."""
    buckets = idmap.bucket_keys(r, sid)
    sample = buckets[:: max(1, len(buckets) // MAX_BUCKETS_MEASURED)]
    ids = int(r.get(keys.visitor_id_counter(sid)) or 0)
    moved = [keys.first_days_moved(sid, b) for b in range(-(-ids // keys.FIRST_DAYS_MOVED))]
    moved_sample = moved[:: max(1, len(moved) // MAX_BUCKETS_MEASURED)]
    rest = [
        keys.visitor_ids(sid),
        keys.visitor_id_counter(sid),
        keys.visitor_id_buckets(sid),
        keys.visitor_id_packed(sid),
        keys.visitor_id_elements(sid),
        keys.first_days(sid),
        keys.first_days_runs(sid),
        keys.first_days_runs_aside(sid),
        keys.latest_first_day(sid),
    ]
    spread = _sampled(r, moved_sample, len(moved) / len(moved_sample)) if moved else (0, 0)
    return _plus(_plus(_sampled(r, sample, len(buckets) / len(sample)), spread), _usage(r, rest))


def _sampled(r: redis.Redis, sample: list[str], scale: float) -> tuple[int, int]:
    """_usage() of a sample of a family's keys, scaled to the whole family."""
    count, size = _usage(r, sample)
    return int(count * scale), int(size * scale)


def _plus(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] + b[0], a[1] + b[1]
