"""Each page's visitors and pageviews on a day, from the raw keys. Page visitors are HLL
estimates; pageviews are exact, and an estimate is never shown above them."""
from datetime import date

import redis

from ..store import keys


def page_days(r: redis.Redis, site_id: int, days: list[date]) -> dict[date, dict[str, tuple[int, int]]]:
    """Each page's (visitors, pageviews) on each day, from the raw keys: two round trips."""
    if not days:
        return {}
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.smembers(keys.pages_index(site_id, day))
    listed = [(day, sorted(p.decode() for p in paths)) for day, paths in zip(days, pipe.execute())]
    pipe = r.pipeline(transaction=False)
    for day, paths in listed:
        for path in paths:
            pipe.pfcount(keys.page_visitors(site_id, day, path))
            pipe.get(keys.page_pageviews(site_id, day, path))
    answers = iter(pipe.execute())
    result = {}
    for day, paths in listed:
        result[day] = {}
        for path in paths:
            estimate, views = next(answers), int(next(answers) or 0)
            result[day][path] = (min(estimate, views), views)  # never more visitors than views
    return result
