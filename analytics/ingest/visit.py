"""An event's visit dimensions: where it came from (sources.py), on what device
(devices.py), from where (geo.py), as the field string record() hands to lib/visits.lua.

A visit keeps the dimensions of its first event (the script decides which event that is),
so every event carries them. Per event this costs a few dictionary lookups: each part is
cached by its input (referrer host, User-Agent), and so is the joined string.
"""
from functools import lru_cache

from ..dimensions import FIELD_SEP, SEP
from . import devices, geo, sources

_CONTROL = str.maketrans({SEP: " ", FIELD_SEP: " ", "\n": " ", "\r": " ", "\t": " "})


def visit_attrs(site_host: str, url: str, referrer: str | None, user_agent: str | None, ip: str | None, width: int | None) -> str:
    """The fields "<dimension>\\x1f<value>" of an event's visit dimensions, joined by
    FIELD_SEP. Unknown values (no UTM tag, no country for a private address, no screen
    width) are left out: those visits count in the site's totals, under no value."""
    return _joined(
        sources.acquisition(url, referrer, site_host),
        devices.device_of(user_agent),
        geo.location_of(ip),
        devices.screen_of(width),
    )


@lru_cache(maxsize=16384)
def _joined(acquisition: sources.Acquisition, device: devices.Device, location: geo.Location, screen: str | None) -> str:
    values = (
        ("source", acquisition.source),
        ("referrer", acquisition.referrer),
        ("channel", acquisition.channel),
        ("utm_source", acquisition.utm_source),
        ("utm_medium", acquisition.utm_medium),
        ("utm_campaign", acquisition.utm_campaign),
        ("utm_term", acquisition.utm_term),
        ("utm_content", acquisition.utm_content),
        ("browser", device.browser),
        ("browser_version", f"{device.browser} {device.browser_version}"),
        ("os", device.os),
        ("os_version", f"{device.os} {device.os_version}"),
        ("device", device.device),
        ("screen", screen),
        ("country", location.country),
        ("region", location.region),
        ("city", location.city),
    )
    return FIELD_SEP.join(f"{name}{SEP}{value.translate(_CONTROL)[:300]}" for name, value in values if value)
