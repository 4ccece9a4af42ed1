"""Where a visitor is, as far as their IP address tells: a country always, a city on request.

Countries come from iptocc, whose Rust extension embeds the five Regional Internet
Registries' allocation lists (rebuilt nightly upstream, so the version pinned in
requirements.txt is the data's date): ~0.2 µs a lookup, nothing to load, about 1 MB. A
registry records the country a block of addresses was *assigned* to, which is where it is
used for ~95% of IPv4 addresses; ISPs' home and mobile customers are the part it gets right
most often, cloud providers' and multinationals' blocks the part it gets wrong.

Regions, cities and coordinates need a city database: point TALLY_GEO_CITY_DB at a MaxMind
GeoLite2-City or DB-IP city-lite .mmdb, opened (memory-mapped) on the first lookup; its
country, placed by measurement rather than by registration, then wins.

The IP address is looked up and forgotten: never logged, never kept, never in an error.
"""

import ipaddress
import threading
from dataclasses import dataclass
from typing import Any

import iptocc
import maxminddb
from django.conf import settings

# Registry codes that are regions, not countries ("EU" covers some 270,000 addresses).
_NOT_COUNTRIES = frozenset({"EU", "AP"})


@dataclass(frozen=True, slots=True)
class Location:
    country: str | None  # ISO 3166-1 alpha-2, "DE"; None when unknown (private, reserved, unassigned)
    region: str | None  # ISO 3166-2 subdivision, "DE-BY", or its English name; with a city database only
    city: str | None  # English name; with a city database only
    latitude: float | None
    longitude: float | None


NOWHERE = Location(None, None, None, None, None)
_COUNTRY_ONLY: dict[str, Location] = {}  # one shared answer a country: a frozen dataclass is slow to build

_load_lock = threading.Lock()
_loaded = False
_city_db: maxminddb.Reader | None = None


def location_of(ip: str | None) -> Location:
    if not ip:
        return NOWHERE
    if "." in ip and ":" in ip:  # IPv4-mapped IPv6, ::ffff:192.0.2.1, from a dual-stack socket
        ip = _unmapped(ip)
    try:
        country = iptocc.country_code(ip)  # None for anything but a public, assigned address
    except UnicodeEncodeError:  # a lone surrogate from JSON: no address
        return NOWHERE
    if country in _NOT_COUNTRIES:
        country = None
    city_db = _city_db if _loaded else _load()
    if city_db is not None:
        return _city(city_db, ip, country)
    return _country_only(country)


def reset() -> None:
    """Forget the city database, so the next lookup opens GEO_CITY_DB again (tests use it)."""
    global _loaded, _city_db
    with _load_lock:
        if _city_db is not None:
            _city_db.close()
        _loaded, _city_db = False, None


def _load() -> maxminddb.Reader | None:
    global _loaded, _city_db
    with _load_lock:
        if not _loaded:
            path = settings.GEO_CITY_DB
            _city_db = maxminddb.open_database(path, maxminddb.MODE_AUTO) if path else None
            _loaded = True
        return _city_db


def _city(city_db: maxminddb.Reader, ip: str, country: str | None) -> Location:
    try:
        record: Any = city_db.get(ip)  # (Any: maxminddb's Record union; a city database's records are nested dicts)
    except (ValueError, TypeError):  # not an IP address (the message would name it: not kept)
        return NOWHERE
    if not isinstance(record, dict):
        return _country_only(country)
    country = record.get("country", {}).get("iso_code") or country
    subdivision = (record.get("subdivisions") or [{}])[0]
    code = subdivision.get("iso_code")
    region = f"{country}-{code}" if code and country else subdivision.get("names", {}).get("en")
    where = record.get("location", {})
    return Location(
        country,
        region,
        record.get("city", {}).get("names", {}).get("en"),
        where.get("latitude"),
        where.get("longitude"),
    )


def _country_only(country: str | None) -> Location:
    if country is None:
        return NOWHERE
    if (location := _COUNTRY_ONLY.get(country)) is None:
        location = _COUNTRY_ONLY[country] = Location(country, None, None, None, None)
    return location


def _unmapped(ip: str) -> str:
    try:
        address = ipaddress.IPv6Address(ip)
    except ValueError:
        return ip  # not IPv6 at all: iptocc will answer None
    return str(address.ipv4_mapped or address)
