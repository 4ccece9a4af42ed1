"""Each page's visitors and pageviews on a day, from the raw keys. Page visitors are exact
for the day's pages with a bitmap, HLL estimates for the others; pageviews are exact, and
an estimate is never shown above them."""

from datetime import date

import redis

from .. import dimensions
from ..store import keys
from .dimensions import day_visitors, queue_day_visitors
from .many import Counts


def page_days(r: redis.Redis, site_id: int, days: list[date]) -> dict[date, dict[str, tuple[int, int]]]:
    """Each page's (visitors, pageviews) on each day, from the raw keys: two round trips.
    Visitors are exact where the page has a complete bitmap that day (dimensions.day_visitors()),
    else its day HLL's estimate."""
    if not days:
        return {}
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.smembers(keys.pages_index(site_id, day))
        pipe.smembers(keys.dimension_bitmapped(site_id, day))
    answers = iter(pipe.execute())
    listed = []
    for day in days:
        paths, bitmapped = sorted(p.decode() for p in next(answers)), next(answers)
        listed.append((day, [(path, dimensions.field("page", path)) for path in paths], bitmapped))
    counting = Counts()  # (a pipeline's client side cost more than the counting: counts/many.py)
    for day, paths, bitmapped in listed:
        for path, field in paths:
            counting.get(keys.page_pageviews(site_id, day, path))
            queue_day_visitors(counting, site_id, day, field, field.encode() in bitmapped)
    answers = iter(counting.run(r))
    result: dict[date, dict[str, tuple[int, int]]] = {}
    for day, paths, bitmapped in listed:
        result[day] = {}
        for path, field in paths:
            views = int(next(answers) or 0)
            visitors, _ = day_visitors(answers, field.encode() in bitmapped)
            result[day][path] = (min(visitors, views), views)  # never more visitors than views
    return result
