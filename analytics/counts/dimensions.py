"""Each visit dimension value's numbers on a day, from the raw keys lib/visits.lua writes:
exact pageviews, visits, bounces, duration and exits, and visitors: a BITCOUNT of the
value's day bitmap where it has a complete one (exact: complete()), else its day
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
        pipe.smembers(keys.dimension_bitmapped(site_id, day))
    answers = iter(pipe.execute())
    result: dict[date, dict[str, dict[str, int]]] = {}
    bitmapped: dict[date, set[bytes]] = {}
    unpack = dimensions.COUNTS.unpack
    for day in days:
        counts, bitmapped[day] = next(answers), next(answers)
        result[day] = {
            raw.decode(): {"visitors": 0, **dict(zip(dimensions.TABLES, unpack(value)))} for raw, value in counts.items()
        }
    pipe = r.pipeline(transaction=False)
    wanted = [(day, name) for day, fields in result.items() for name in fields if _has_visitors(name)]
    for day, name in wanted:
        pipe.pfcount(keys.dimension_visitors(site_id, day, name))
        if name.encode() in bitmapped[day]:
            pipe.bitcount(keys.dimension_bitmap(site_id, day, name))  # (exact: lib/segments.lua)
    answers = iter(pipe.execute())
    for day, name in wanted:
        visitors = next(answers)
        if name.encode() in bitmapped[day]:
            bits = next(answers)
            visitors = bits if complete(bits, visitors) else visitors
        row = result[day][name]
        row["visitors"] = min(visitors, max(row["pageviews"], row["visits"]))
    return result


def _has_visitors(name: str) -> bool:
    """Exit pages count visits only; the totals' visitors are the site's own HLL."""
    return name != dimensions.TOTAL and not name.startswith(dimensions.EXIT + dimensions.SEP)


def complete(bits: int, estimate: int) -> bool:
    """Does a day bitmap of `bits` visitors hold all of them, by its HLL's `estimate`? An
    HLL errs by 0.81% (one standard error); a bitmap that counts fewer by more than four of
    them (and two visitors) is missing some: it was made after the day's first visitors."""
    return estimate <= bits + max(2, 0.0325 * bits)
