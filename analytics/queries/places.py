"""Visitors within some distance of a place, from the day GEO sets of cities ingest keeps
when a city database is configured: the cities in the circle (GEOSEARCH), then the union of
those cities' visitor HLLs over the range (an estimate, ±0.81%). Only cities are placed,
at their own coordinates, never a visitor's.

Without a city database (settings.GEO_CITY_DB) ingest knows countries only: regions, cities
and places stay empty, and the readers say why (NO_CITY_DATABASE) rather than show nothing.
Cities stored while one was configured stay readable after it is removed.

A day's GEO set and city HLLs are raw day keys: they expire with its others (the site's
keep_daily_days after the rollup, analytics.rollups.expiry), while the rollup's rows keep
listing the day's cities (DimensionDaily). Such a day cannot be counted near anything any
more; `visitors_near` leaves it out and says so (`expired`), never as "nobody came"."""

from datetime import date
from typing import Any

import redis
from django.conf import settings

from .. import dimensions
from ..counts import fold
from ..models import DimensionDaily
from ..periods import days_between
from ..sites import SiteInfo
from ..store import keys
from .breakdown import breakdown

CITY_PROPERTIES = ("region", "city")  # the visit dimensions only a city database fills
NO_CITY_DATABASE = (
    "Regions and cities need a city database: set TALLY_GEO_CITY_DB to a MaxMind GeoLite2-City "
    "or DB-IP city-lite .mmdb file"
)


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
    return (
        dimension in CITY_PROPERTIES
        and not found
        and not city_database()
        and not city_values_stored(r, site, start, end, dimension)
    )


def expired_days(r: redis.Redis, site: SiteInfo, days: list[date]) -> list[date]:
    """The days whose cities can no longer be placed: past the expiry policy (only those may
    have lost their raw keys: see SiteInfo.oldest_day), their raw keys gone (no GEO set,
    no counts hash: not merely a day whose cities had no coordinates), yet with cities
    in the rollup's rows. A day without any stored city placed no one: it counts, as 0."""
    older = [day for day in days if day < site.oldest_day()]
    if not older:
        return []
    pipe = r.pipeline(transaction=False)
    for day in older:
        pipe.exists(keys.places(site.id, day), keys.dimension_counts(site.id, day))
    gone = [day for day, kept in zip(older, pipe.execute()) if not kept]
    if not gone:
        return []
    listed = set(
        DimensionDaily.objects.filter(site_id=site.id, dimension="city", date__in=gone).values_list("date", flat=True)
    )
    return [day for day in gone if day in listed]


def runs(days: list[date]) -> list[dict]:
    """Consecutive days as [{"from", "to"}] (ISO dates), in order."""
    found: list[list[date]] = []
    for day in sorted(days):
        if found and (day - found[-1][1]).days == 1:
            found[-1][1] = day
        else:
            found.append([day, day])
    return [{"from": first.isoformat(), "to": last.isoformat()} for first, last in found]


def _spoken(spans: list[dict]) -> str:
    return ", ".join(s["from"] if s["from"] == s["to"] else f"{s['from']} to {s['to']}" for s in spans)


def locations_gone(site: SiteInfo, expired: list[dict], counted: list[dict]) -> str:
    """Why some days (runs) are not counted near a place, and which were: operator words,
    no operator paths."""
    counted_text = f"counted {_spoken(counted)} only: " if counted else ""
    return (
        f"{counted_text}the city locations of {_spoken(expired)} are no longer kept (a day's places expire with its "
        f"raw keys, {site.keep_daily_days} days after it: the site's keep_daily_days); "
        "breakdown?property=city still lists those days' cities"
    )


def visitors_near(
    r: redis.Redis, site: SiteInfo, start: date, end: date, longitude: float, latitude: float, km: float
) -> dict:
    """{"visitors": n, "cities": [{"city", "km", "visitors"}] (nearest first), "counted":
    runs of the days counted, "expired": runs of those whose locations are gone (then a
    "message" says so)}: the numbers are those of the counted days only."""
    days = days_between(start, end)
    expired = expired_days(r, site, days)
    gone = set(expired)
    counted = [day for day in days if day not in gone]
    spans: dict[str, Any] = {"counted": runs(counted), "expired": runs(expired)}
    if expired:
        spans["message"] = locations_gone(site, spans["expired"], spans["counted"])
    pipe = r.pipeline(transaction=False)
    for day in counted:
        pipe.geosearch(
            keys.places(site.id, day), longitude=longitude, latitude=latitude, radius=km, unit="km", withdist=True
        )
    found: dict[str, float] = {}
    by_city: dict[str, list[date]] = {}
    for day, answer in zip(counted, pipe.execute()):
        for member, distance in answer:
            city = member.decode()
            found[city] = round(distance, 1)
            by_city.setdefault(city, []).append(day)
    cities = sorted(found, key=lambda c: (found[c], c))
    if not cities:
        return {"visitors": 0, "cities": [], **spans}
    fold.ensure_hlls(r, site.id, [(day, dimensions.field("city", city)) for city in cities for day in by_city[city]])
    pipe = r.pipeline(transaction=False)
    for city in cities:
        pipe.pfcount(*(keys.dimension_visitors(site.id, day, dimensions.field("city", city)) for day in by_city[city]))
    pipe.pfcount(
        *(
            keys.dimension_visitors(site.id, day, dimensions.field("city", city))
            for city in cities
            for day in by_city[city]
        )
    )
    *each, union = pipe.execute()
    return {
        "visitors": union,
        "cities": [{"city": c, "km": found[c], "visitors": n} for c, n in zip(cities, each)],
        **spans,
    }
