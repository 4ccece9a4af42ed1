"""Each visit dimension value's numbers on a day, from the raw keys lib/visits.lua writes:
exact pageviews, visits, bounces, duration and exits, and visitors from the value's day
HLL (an estimate, never shown above the value's pageviews or visits)."""
from datetime import date

import redis

from .. import dimensions
from ..store import keys


def dimension_days(r: redis.Redis, site_id: int, days: list[date]) -> dict[date, dict[str, dict[str, int]]]:
    """{day: {field: {"visitors", "pageviews", "visits", "bounces", "duration", "exits"}}}:
    two round trips, whatever the number of days."""
    if not days:
        return {}
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.hgetall(keys.dimension_counts(site_id, day))
    result: dict[date, dict[str, dict[str, int]]] = {}
    unpack = dimensions.COUNTS.unpack
    for day, counts in zip(days, pipe.execute()):
        result[day] = {
            raw.decode(): {"visitors": 0, **dict(zip(dimensions.TABLES, unpack(value)))} for raw, value in counts.items()
        }
    pipe = r.pipeline(transaction=False)
    wanted = [(day, name) for day, fields in result.items() for name in fields if _has_visitors(name)]
    for day, name in wanted:
        pipe.pfcount(keys.dimension_visitors(site_id, day, name))
    for (day, name), estimate in zip(wanted, pipe.execute()):
        row = result[day][name]
        row["visitors"] = min(estimate, max(row["pageviews"], row["visits"]))
    return result


def _has_visitors(name: str) -> bool:
    """Exit pages count visits only; the totals' visitors are the site's own HLL."""
    return name != dimensions.TOTAL and not name.startswith(dimensions.EXIT + dimensions.SEP)
