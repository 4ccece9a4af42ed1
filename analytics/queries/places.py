"""Visitors within some distance of a place, from the day GEO sets of cities ingest keeps
when a city database is configured: the cities in the circle (GEOSEARCH), then the union of
those cities' visitor HLLs over the range (an estimate, ±0.81%). Only cities are placed,
at their own coordinates, never a visitor's."""
from datetime import date

import redis

from .. import dimensions
from ..periods import days_between
from ..sites import SiteInfo
from ..store import keys


def visitors_near(r: redis.Redis, site: SiteInfo, start: date, end: date, longitude: float, latitude: float, km: float) -> dict:
    """{"visitors": n, "cities": [{"city", "km", "visitors"}]} (nearest first)."""
    days = days_between(start, end)
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.geosearch(keys.places(site.id, day), longitude=longitude, latitude=latitude, radius=km, unit="km", withdist=True)
    found: dict[str, float] = {}
    by_city: dict[str, list[date]] = {}
    for day, answer in zip(days, pipe.execute()):
        for member, distance in answer:
            city = member.decode()
            found[city] = round(distance, 1)
            by_city.setdefault(city, []).append(day)
    cities = sorted(found, key=lambda c: (found[c], c))
    if not cities:
        return {"visitors": 0, "cities": []}
    pipe = r.pipeline(transaction=False)
    for city in cities:
        pipe.pfcount(*(keys.dimension_visitors(site.id, day, dimensions.field("city", city)) for day in by_city[city]))
    pipe.pfcount(*(keys.dimension_visitors(site.id, day, dimensions.field("city", city)) for city in cities for day in by_city[city]))
    *each, union = pipe.execute()
    return {"visitors": union, "cities": [{"city": c, "km": found[c], "visitors": n} for c, n in zip(cities, each)]}
