"""Browser, operating system and kind of device from the User-Agent; screen-width buckets.

ua-parser matches a User-Agent against uap-core's list of regular expressions (shipped as
ua-parser-builtins, whose version is the list's date). Its Rust accelerator, ua-parser-rs,
takes ~10 µs a User-Agent where the pure-Python resolver takes ~1 ms, so it is imported by
name: if it is missing, this module fails to import rather than ingest slowing down a
hundredfold unnoticed. Real traffic repeats a few thousand User-Agents, so whole answers
are cached per process (ua-parser's own CachingResolver would only cache again below ours).

The kind of device is read from the User-Agent's own words, as browsers intend (uap-core's
device list names models, not kinds): an iPad, a "Tablet" or an Android device without
"Mobile" is a tablet; "Mobi", an iPhone or iPod is a phone; anything else is a desktop.
An iPad asking for the desktop site says "Macintosh" and counts as a desktop; the screen
width (screen_of) still tells.

Naming: browser and OS families are uap-core's ("Chrome Mobile", "Mobile Safari",
"Samsung Internet"), except that "Mac OS X" is called macOS, Apple's name since 2016:
browsers there still send "Mac OS X 10_15_7" whatever the version (Safari, Chrome and
Firefox froze it), and "Mac OS X 14.6" was never a product. Windows 11 says "Windows NT
10.0" like Windows 10, so both are Windows 10.
"""

from dataclasses import dataclass
from functools import cache, lru_cache

from ua_parser import OS, Domain, load_lazy_builtins
from ua_parser.regex import Resolver  # ua-parser-rs: ImportError without the accelerator

UNKNOWN = "(unknown)"
# Real User-Agents are a few hundred characters; a longer one is cut before it is parsed
# and cached, so an attacker's 8 KB headers cannot fill the cache with megabytes.
MAX_USER_AGENT = 1024
_RENAMED = {"Mac OS X": "macOS", "Other": UNKNOWN}


@dataclass(frozen=True, slots=True)
class Device:
    browser: str  # "Chrome", "Firefox", "Safari", "Mobile Safari", "Edge", ...; "(unknown)"
    browser_version: str  # major version, e.g. "131"; "(unknown)"
    os: str  # "Windows", "macOS", "iOS", "Android", "Linux", ...; "(unknown)"
    os_version: str  # major.minor at most, e.g. "10", "17.4"; "(unknown)"
    device: str  # "Desktop" | "Mobile" | "Tablet"


def device_of(user_agent: str | None) -> Device:
    return _device((user_agent or "")[:MAX_USER_AGENT])


def screen_of(width: int | None) -> str | None:
    """Plausible's screen-size buckets, by the screen's CSS width in pixels."""
    if width is None or width <= 0:
        return None
    if width < 576:
        return "Mobile"
    if width < 992:
        return "Tablet"
    if width < 1440:
        return "Laptop"
    return "Desktop"


@cache
def _resolver() -> Resolver:
    """Built on first use: handing uap-core's ~1,000 expressions to the Rust side takes ~0.15 s."""
    return Resolver(load_lazy_builtins())


@lru_cache(maxsize=4096)
def _device(user_agent: str) -> Device:
    parsed = _resolver()(user_agent, Domain.USER_AGENT | Domain.OS)
    browser, os = parsed.user_agent, parsed.os
    return Device(
        browser=_name(browser.family) if browser else UNKNOWN,
        browser_version=(browser and browser.major) or UNKNOWN,
        os=_name(os.family) if os else UNKNOWN,
        os_version=_os_version(os),
        device=_kind(user_agent),
    )


def _name(family: str) -> str:
    return _RENAMED.get(family, family)


def _os_version(os: OS | None) -> str:
    if not os or not os.major:
        return UNKNOWN
    return f"{os.major}.{os.minor}" if os.minor else os.major


def _kind(user_agent: str) -> str:
    if "iPad" in user_agent or "Kindle" in user_agent or "Silk/" in user_agent or "PlayBook" in user_agent:
        return "Tablet"
    if (
        "Tablet" in user_agent and "Tablet PC" not in user_agent
    ):  # Firefox on Android tablets; not old IE's "Tablet PC 2.0"
        return "Tablet"
    if "Mobi" in user_agent or "iPhone" in user_agent or "iPod" in user_agent:
        return "Mobile"
    if "Android" in user_agent:  # Android without "Mobile" is a tablet, by Google's own rule
        return "Tablet"
    return "Desktop"
