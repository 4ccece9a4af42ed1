"""The dimensions a visit or an event is broken down by, named once for ingest, rollups,
queries and the API.

A *visit* (session) carries the visit dimensions of its first event: where it came from,
on what device, from where, and its entry page. Its pageviews, visitors, bounces and
duration count under each of them. `exit_page` is a visit's last pageview (only visits
are counted under it). Field strings join a dimension and its value with SEP (a control
character no value holds: ingest strips control characters), and a visit's fields with
FIELD_SEP; record_batch.lua (lib/visits.lua) splits them the same way.
"""

from .store import keys, protocol

VISIT_TIMEOUT = 30 * 60  # seconds without an event that end a visit (Plausible's)
SEP = keys.FIELD_VALUE_SEP  # "\x1f": field names are parts of key names (store/keys.py)
FIELD_SEP = protocol.FIELD_SEP
GROUP_SEP = protocol.GROUP_SEP  # between the parts of a visit's fields (source, device, location, screen)
OTHER = protocol.OTHER  # values past a site's daily quota of distinct values for a dimension
DIRECT = "Direct / None"
UNKNOWN = "(unknown)"

SOURCE_DIMENSIONS = (
    "source",
    "referrer",
    "channel",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
)
DEVICE_DIMENSIONS = ("browser", "browser_version", "os", "os_version", "device", "screen")
LOCATION_DIMENSIONS = ("country", "region", "city")
HOSTNAME = "hostname"  # the host the visit landed on (ingest/visit.py: hostname_of), in the source part
VISIT_DIMENSIONS = (*SOURCE_DIMENSIONS, *DEVICE_DIMENSIONS, *LOCATION_DIMENSIONS, "entry_page", HOSTNAME)
EXIT = "exit_page"
PAGEVIEW = "pageview"  # the event name of a pageview (every other name is a custom event)
# The visits that viewed a page, by page: a visit counts under each distinct page it viewed
# (its visits, bounces and duration on the day it started; the page's own pageviews), so a
# page filter has Plausible's visit metrics. Not a visit dimension: no visitors, no bitmaps,
# no breakdown (lib/visits.lua, MAX_VISIT_PAGES).
VISIT_PAGE = "visit_page"
VISIT_EVENT = "visit_event"  # the same for the custom events a visit sent: a goal filter's visits
ALL = (*VISIT_DIMENSIONS, EXIT)

# The per-day tables (hashes of field -> number) a visit dimension's metrics live in.
# "pageviews" and "visitors" count on the day of the event; "visits", "bounces" and
# "duration" (seconds, summed) on the day the visit started; "exits" is visits by last page.
TABLES = ("pageviews", "visits", "bounces", "duration", "exits")
# How a field's TABLES numbers are packed in the day's counts hash (store/protocol.py).
COUNTS = protocol.COUNTS


TOTAL = "total" + SEP + "all"  # every visit counts under this field too: the site's totals


def field(dimension: str, value: str) -> str:
    return f"{dimension}{SEP}{value}"


def split(field_: str) -> tuple[str, str]:
    dimension, _, value = field_.partition(SEP)
    return dimension, value
