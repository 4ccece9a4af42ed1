"""Each visit dimension value's numbers on a day, from the raw keys lib/visits.lua writes:
exact pageviews, visits, bounces, duration and exits, and visitors: a BITCOUNT of the
value's day bitmap where it has a complete one (exact: day_visitors()), else its day
HLL (an estimate, never shown above the value's pageviews or visits)."""

from collections.abc import Iterator
from datetime import date

import redis

from .. import dimensions
from ..store import keys
from .many import Counts


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
    unpack = dimensions.COUNTS.unpack_from  # (a value may be padded: lib/visits.lua, widen_counts)
    for day in days:
        counts, bitmapped[day] = next(answers), next(answers)
        result[day] = {
            raw.decode(): {"visitors": 0, **dict(zip(dimensions.TABLES, unpack(value)))}
            for raw, value in counts.items()
        }
    counting = Counts()  # (a pipeline's client side cost more than the counting: counts/many.py)
    wanted = [(day, name) for day, fields in result.items() for name in fields if _has_visitors(name)]
    for day, name in wanted:
        queue_day_visitors(counting, site_id, day, name, name.encode() in bitmapped[day])
    answers = iter(counting.run(r))
    for day, name in wanted:
        visitors, _ = day_visitors(answers, name.encode() in bitmapped[day])
        row = result[day][name]
        row["visitors"] = min(visitors, max(row["pageviews"], row["visits"]))
    return result


def _has_visitors(name: str) -> bool:
    """Exit pages and a visit's pages and events count visits only; the totals' visitors are the site's own HLL."""
    return name != dimensions.TOTAL and not name.startswith(
        (
            dimensions.EXIT + dimensions.SEP,
            dimensions.VISIT_PAGE + dimensions.SEP,
            dimensions.VISIT_EVENT + dimensions.SEP,
        )
    )


def queue_day_visitors(pipe, site_id: int, day: date, field: str, bitmapped: bool):
    """Queue what day_visitors() reads: the field's day HLL count and, where the field has
    a bitmap that day (lib/segments.lua), its BITCOUNT."""
    pipe.pfcount(keys.field_visitors(site_id, day, field))
    if bitmapped:
        pipe.bitcount(keys.dimension_bitmap(site_id, day, field))


def day_visitors(answers: Iterator, bitmapped: bool) -> tuple[int, bool]:
    """A field's visitors that day from queue_day_visitors()'s answers, and whether the
    number is exact: its bitmap's count where the bitmap is complete(), else the HLL's."""
    estimate = next(answers)
    if bitmapped:
        bits = next(answers)
        if complete(bits, estimate):
            return bits, True
    return estimate, False


def complete(bits: int, estimate: int) -> bool:
    """Does a day bitmap of `bits` visitors hold all of them, by its HLL's `estimate`? An
    HLL errs by 0.81% (one standard error); a bitmap that counts fewer by more than four of
    them (and two visitors) is missing some: it was made after the day's first visitors."""
    return estimate <= bits + max(2, 0.0325 * bits)
