"""Visitors within some distance of a place, from the day GEO sets of cities ingest keeps
when a city database is configured: the cities in the circle (GEOSEARCH), then the union of
those cities' visitor HLLs over the range (an estimate, ±0.81%). Only cities are placed,
at their own coordinates, never a visitor's.

Without a city database (settings.GEO_CITY_DB) ingest knows countries only: regions, cities
and places stay empty, and the readers say why (NO_CITY_DATABASE) rather than show nothing.
Cities stored while one was configured stay readable after it is removed."""
from datetime import date

import redis
from django.conf import settings

from .. import dimensions
from ..periods import days_between
from ..sites import SiteInfo
from ..store import keys
from .breakdown import breakdown

CITY_PROPERTIES = ("region", "city")  # the visit dimensions only a city database fills
NO_CITY_DATABASE = ("Regions and cities need a city database: set TALLY_GEO_CITY_DB to a MaxMind GeoLite2-City "
                    "or DB-IP city-lite .mmdb file")


def city_database() -> bool:
    """Is a city database configured (so regions, cities and places are recorded)?"""
    return bool(settings.GEO_CITY_DB)


def cities_stored(r: redis.Redis, site: SiteInfo, start: date, end: date) -> bool:
    """Were any cities placed on a day of the range (perhaps while a city database was set)?"""
    return bool(r.exists(*(keys.places(site.id, day) for day in days_between(start, end))))


def city_values_stored(r: redis.Redis, site: SiteInfo, start: date, end: date, dimension: str) -> bool:
    """Has a day of the range any values of `dimension` (region or city), recorded while a
    city database was set? The day GEO sets answer first (one EXISTS); they expire with the
    raw day keys, but the rollups' stored rows still list the values, so those are asked next."""
    return cities_stored(r, site, start, end) or breakdown(r, site, start, end, dimension, limit=1)[1] > 0


def needs_city_database(r: redis.Redis, site: SiteInfo, start: date, end: date, dimension: str, found: int) -> bool:
    """Is a list of `dimension` with `found` rows empty because no city database is
    configured, rather than because nobody came from a region or city? The one decision the
    breakdown API (a 409) and the exports (a note) take. Only an empty answer asks whether
    values were stored (those are listed, and a filter may leave none of them)."""
    return (dimension in CITY_PROPERTIES and not found and not city_database()
            and not city_values_stored(r, site, start, end, dimension))


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
