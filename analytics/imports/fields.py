"""An imported event's visit fields, from the values another product measured.

Live events get their visit dimensions from a request (analytics.ingest.visit): the
referrer and URL, the User-Agent, the client's address. An export holds the other
product's answers instead ("Chrome" on "Android", "United States", "mobile"), so here they
are put in Tally's forms: uap-core's browser and OS families ("Chrome Mobile", "Mobile
Safari", "macOS"), versions as major (browser) and major.minor (OS), Desktop/Mobile/Tablet,
ISO country codes (countries.py), Plausible's screen buckets. The source fields are the
live path's own (visit.visit_attrs), so a referrer or a tagged URL names the same source
and channel whichever way it came. The field string is the one record() takes.
"""

import re
from functools import lru_cache

from ..dimensions import FIELD_SEP, GROUP_SEP, SEP
from ..ingest import devices, geo
from ..ingest.visit import fields_of

UNKNOWN = devices.UNKNOWN
_CONTROL = str.maketrans({SEP: " ", FIELD_SEP: " ", GROUP_SEP: " ", "\n": " ", "\r": " ", "\t": " "})
_NOT_SET = frozenset({"", "(not set)", "(other)", "unknown", "null"})

# Browser names as GA4 and Umami (detect-browser's ids) give them -> uap-core's family.
BROWSERS = {
    "chrome": "Chrome",
    "crios": "Chrome Mobile iOS",
    "chromium-webview": "Chrome Mobile WebView",
    "android webview": "Chrome Mobile WebView",
    "safari": "Safari",
    "ios": "Mobile Safari",
    "safari (in-app)": "Mobile Safari UI/WKWebView",
    "ios-webview": "Mobile Safari UI/WKWebView",
    "firefox": "Firefox",
    "fxios": "Firefox iOS",
    "edge": "Edge",
    "microsoft edge": "Edge",
    "samsung browser": "Samsung Internet",
    "edge-chromium": "Edge",
    "edge-ios": "Edge Mobile",
    "samsung": "Samsung Internet",
    "samsung internet": "Samsung Internet",
    "opera": "Opera",
    "opera-mini": "Opera Mini",
    "ie": "IE",
    "internet explorer": "IE",
    "yabrowser": "Yandex Browser",
    "yandexbrowser": "Yandex Browser",
    "silk": "Amazon Silk",
    "uc browser": "UC Browser",
    "miui": "MiuiBrowser",
    "facebook": "Facebook",
    "instagram": "Instagram",
    "android": "Android",
    "android browser": "Android",
    "kakaotalk": "KakaoTalk",
}
# uap-core names a mobile build apart: (family, OS) -> its mobile family
MOBILE_BROWSERS = {
    ("Chrome", "Android"): "Chrome Mobile",
    ("Chrome", "iOS"): "Chrome Mobile iOS",
    ("Safari", "iOS"): "Mobile Safari",
    ("Firefox", "Android"): "Firefox Mobile",
    ("Firefox", "iOS"): "Firefox iOS",
    ("Edge", "Android"): "Edge Mobile",
    ("Edge", "iOS"): "Edge Mobile",
    ("Opera", "Android"): "Opera Mobile",
}
# OS names (GA4's; Umami's, which carry Windows' version; Plausible's) -> (uap-core's family, version)
SYSTEMS = {
    "mac": ("macOS", None),
    "gnu/linux": ("Linux", None),
    "macintosh": ("macOS", None),
    "mac os": ("macOS", None),
    "mac os x": ("macOS", None),
    "macos": ("macOS", None),
    "android os": ("Android", None),
    "chrome os": ("Chrome OS", None),
    "open bsd": ("OpenBSD", None),
    "sun os": ("Solaris", None),
    "windows xp": ("Windows", "XP"),
    "windows vista": ("Windows", "Vista"),
}
DEVICES = {"desktop": "Desktop", "laptop": "Desktop", "mobile": "Mobile", "tablet": "Tablet"}
BOT_NAMES = frozenset({"searchbot", "search bot", "curl", "phantomjs"})
_VERSION = re.compile(r"(\d+)(?:\.(\d+))?")


def known(value) -> str | None:
    """A value, or None for an export's placeholders ("(not set)", "", null)."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    return None if value.lower() in _NOT_SET else value


@lru_cache(maxsize=4096)
def device(browser: str | None, browser_version: str | None, os: str | None, os_version: str | None, kind: str | None):
    """Tally's Device for an export's names, or None when it names nothing."""
    system, version = _system(os, os_version)
    name = _browser(browser, system)
    if name is None and system is None and known(kind) is None:
        return None
    return devices.Device(
        browser=name or UNKNOWN,
        browser_version=_major(browser_version),
        os=system or UNKNOWN,
        os_version=version or UNKNOWN,
        device=DEVICES.get((known(kind) or "").lower(), "Desktop"),  # (devices.py: anything else is a desktop)
    )


def is_bot(browser: str | None, os: str | None) -> bool:
    return (browser or "").lower() in BOT_NAMES or (os or "").lower() in BOT_NAMES


def _browser(name: str | None, system: str | None) -> str | None:
    name = known(name)
    if name is None:
        return None
    family = BROWSERS.get(name.lower(), name)
    return MOBILE_BROWSERS.get((family, system or ""), family)


def _system(name: str | None, version: str | None) -> tuple[str | None, str | None]:
    name = known(name)
    if name is None:
        return None, None
    family, fixed = SYSTEMS.get(name.lower(), (None, None))
    if family is None and name.lower().startswith("windows ") and _VERSION.fullmatch(name[8:]):
        family, fixed = "Windows", name[8:]  # Umami's "Windows 10"
    family, fixed = family or name, fixed or _os_version(version)
    if family == "Windows" and fixed == "11":
        fixed = "10"  # (as live events: Windows 11 sends Windows NT 10.0)
    return family, fixed


def _major(version: str | None) -> str:
    match = _VERSION.search(known(version) or "")
    return match[1] if match else UNKNOWN


def _os_version(version: str | None) -> str | None:
    """GA4's "iOS 17.4.1", "Windows 10", "Macintosh Intel 10.15" -> "17.4", "10", "10.15"."""
    numbers = [word for word in (known(version) or "").split() if word[0].isdigit()]
    match = _VERSION.match(numbers[-1]) if numbers else None
    if match is None:
        return None
    return f"{match[1]}.{match[2]}" if match[2] else match[1]


def location(country: str | None, region: str | None, city: str | None) -> geo.Location:
    """A Location of an ISO country code, a region (ISO 3166-2 code, or its name as GA4
    gives it) and a city; no coordinates (an export has none)."""
    if not country:
        return geo.NOWHERE
    return geo.Location(country, known(region), known(city), None, None)


def screen(width: int | None) -> str | None:
    return devices.screen_of(width)


def visit_fields(
    site_host: str,
    url: str,
    referrer: str | None,
    found: devices.Device | None,
    where: geo.Location,
    screen_size: str | None = None,
) -> str:
    """The visit fields record() takes, from an export's values: built by the same code as
    a live event's (ingest/visit.py: fields_of), so an imported source, device or place is
    counted under the very value a live one is."""
    return fields_of(site_host, url, referrer, found or "", where, screen_size)
