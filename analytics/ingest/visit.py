"""An event's visit dimensions: where it came from (sources.py), on what device
(devices.py), from where (geo.py), as the field string record() hands to lib/visits.lua.

A visit keeps the dimensions of its first event (the script decides which event that is),
so every event carries them. This runs once per event, so each of the three parts is
cached as its finished text, by the input it depends on: the referrer and the URL's query
string, the User-Agent, the country. A typical event costs three dictionary lookups and a
join (~1 µs), where building the parts each time cost ~10 µs.
"""

from functools import lru_cache

from .. import sources
from ..dimensions import FIELD_SEP, GROUP_SEP, SEP
from . import devices, geo

_CONTROL = str.maketrans({SEP: " ", FIELD_SEP: " ", GROUP_SEP: " ", "\n": " ", "\r": " ", "\t": " "})


def visit_attrs(
    site_host: str, url: str, referrer: str | None, user_agent: str | None, ip: str | None, width: int | None
) -> str:
    """The fields "<dimension>\\x1f<value>" of an event's visit dimensions, joined by
    FIELD_SEP within each part (source, device, location, screen) and GROUP_SEP between.
    Unknown values (no UTM tag, no country for a private address, no screen width) are
    left out: those visits count in the site's totals, under no value."""
    screen = devices.screen_of(width) if width is not None else None
    return fields_of(site_host, url, referrer, _device_fields(user_agent or ""), geo.location_of(ip), screen)


def fields_of(
    site_host: str, url: str, referrer: str | None, device: "str | devices.Device", location: geo.Location, screen
) -> str:
    """visit_attrs() from values found already: the device as its part's text or as a
    Device, the location, the screen's size class (or None). Importers (analytics.imports)
    give what an export recorded, and get the very fields a live event would."""
    query = url.partition("?")[2] if "?" in url else ""
    parts = [_source_fields(site_host, query, referrer, hostname_of(url))]
    if device := device if isinstance(device, str) else device_part(device):
        parts.append(device)
    if location.country:
        parts.append(
            _country_fields(location.country)
            if location.city is None and location.region is None
            else _location_fields(location)
        )
    if screen:
        parts.append(f"screen{SEP}{screen}")
    return GROUP_SEP.join(parts)  # (parts, each of FIELD_SEP-joined fields: lib/visits.lua counts by part)


def _fields(pairs) -> str:
    return FIELD_SEP.join(f"{name}{SEP}{value.translate(_CONTROL)[:300]}" for name, value in pairs if value)


def hostname_of(url: str) -> str:
    """The host of an event's URL as Plausible names it (lower case, no port, no "www."),
    or "" for a URL without one: the `hostname` dimension (a site served on several hosts,
    a staging host, a subdomain)."""
    _, found, rest = url.partition("://")
    if not found:
        return ""
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]
    host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host  # (a port; an IPv6 literal keeps its colons)
    return host.lower().removeprefix("www.")


@lru_cache(maxsize=20_000)
def _source_fields(site_host: str, query: str, referrer: str | None, hostname: str = "") -> str:
    """The source part: where the visit came from, and the host it landed on."""
    a = sources.acquisition(f"https://{site_host}/?{query}" if query else f"https://{site_host}/", referrer, site_host)
    return _fields(
        (
            ("hostname", hostname),
            ("source", a.source),
            ("referrer", a.referrer),
            ("channel", a.channel),
            ("utm_source", a.utm_source),
            ("utm_medium", a.utm_medium),
            ("utm_campaign", a.utm_campaign),
            ("utm_term", a.utm_term),
            ("utm_content", a.utm_content),
        )
    )


@lru_cache(maxsize=4096)
def _device_fields(user_agent: str) -> str:
    return device_part(devices.device_of(user_agent))


@lru_cache(maxsize=4096)
def device_part(d: devices.Device) -> str:
    """A device's part of the visit fields: browser, its version, OS, its version, kind."""
    return _fields(
        (
            ("browser", d.browser),
            ("browser_version", _versioned(d.browser, d.browser_version)),
            ("os", d.os),
            ("os_version", _versioned(d.os, d.os_version)),
            ("device", d.device),
        )
    )


def _versioned(name: str, version: str) -> str:
    """ "Chrome 131", "Chrome (unknown)"; an unknown browser's version is "(unknown)", not
    "(unknown) (unknown)"."""
    return name if name == devices.UNKNOWN else f"{name} {version}"


@lru_cache(maxsize=512)
def _country_fields(country: str) -> str:
    return _fields((("country", country),))


def _location_fields(location: geo.Location) -> str:
    city = city_value(location)
    if city and location.longitude is not None and location.latitude is not None:
        remember_place(city, location.longitude, location.latitude)
    return _fields((("country", location.country), ("region", location.region), ("city", city)))


def city_value(location: geo.Location) -> str | None:
    """A city as the `city` dimension names it: with its region (or country), "Springfield,
    US-IL": cities of one name in different places stay apart."""
    where = location.region or location.country
    return f"{location.city}, {where}" if location.city and where else location.city


# Where each city is, as the city database first placed it: ingest adds a day's cities to
# a GEO set with these coordinates (no visitor's own position is kept), for "visitors
# within N km of a place".
MAX_PLACES = 200_000
_places: dict[str, tuple[float, float]] = {}


def remember_place(city: str, longitude: float, latitude: float):
    if len(_places) < MAX_PLACES:
        _places.setdefault(city.translate(_CONTROL)[:300], (longitude, latitude))


def place_of(city: str) -> tuple[float, float] | None:
    """(longitude, latitude) of a city value, if the city database placed it in this process."""
    return _places.get(city)


def warm_up():
    """Load what a process's first event would otherwise wait for (measured ~0.2 s: the
    bot patterns, the User-Agent parser, the location database, the referrer lists; and
    the bot checks' lists, ~0.1 s more), so a web worker loads them before it serves, not
    while its first visitor waits."""
    from .bots import is_bot, referrer_spam
    from .datacenters import is_datacenter

    agent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"
    is_bot(agent)
    referrer_spam("https://www.google.com/")
    is_datacenter("81.2.69.160")
    visit_attrs(
        "example.com", "https://example.com/?utm_source=warm-up", "https://www.google.com/", agent, "81.2.69.160", 1280
    )
