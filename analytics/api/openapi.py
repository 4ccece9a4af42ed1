"""The OpenAPI 3.1 document for Tally's ingest and read API, served at /api/v1/openapi.json.

Written by hand next to the code it describes; a test checks that every API route is in
it and that it is a valid OpenAPI document.
"""

from django.conf import settings
from django.views.decorators.http import require_GET

from ..dimensions import ALL as DIMENSIONS
from ..queries import (
    AGGREGATE_METRICS,
    DAY_PERIODS,
    DEFAULT_METRICS,
    METRICS,
    PERIOD_METRICS,
    VISIT_METRICS,
    WEEK_PERIODS,
)
from . import params
from .http import json_response


def _error(description):
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _param(name, description, schema, required=False):
    return {"name": name, "in": "query", "required": required, "description": description, "schema": schema}


SITE = params.SITE.doc()  # (every parameter the views read is declared in params.py, and described from there)
RANGE = tuple(p.doc() for p in params.RANGE)
FILTERS = params.FILTERS.doc()
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}}
INGEST_ERRORS = {
    "408": _error("The body took longer than the server waits for (10 s by default)."),
    "415": _error("A Content-Encoding other than gzip."),
    "429": {**_error("Over a rate limit (per client IP, or the site's); nothing was counted."), "headers": RETRY_AFTER},
    "503": _error("Redis is unavailable and the local spool could not be written; retry later."),
}

PERIOD_ANSWER = {
    "site": {"type": "string"},
    "from": {"type": "string", "format": "date"},
    "to": {"type": "string", "format": "date"},
}
FILTERED_ANSWER = {
    "filters": {
        "type": "string",
        "description": "With `filters` (the funnel: always): the filters as applied, `;`-separated (duplicates kept once, "
        'Plausible\'s prefixes dropped; "" for none).',
    },
    "estimate": {
        "type": "boolean",
        "description": "With `filters` (the funnel: always): true when a number in the answer is an estimate (a value had no "
        "visitor bitmap on a day of the range, so HyperLogLogs answer for it).",
    },
}
DAY_RUNS = {
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["from", "to"],
        "properties": {"from": {"type": "string", "format": "date"}, "to": {"type": "string", "format": "date"}},
    },
}
ROW_ESTIMATE = {
    "type": "boolean",
    "const": True,
    "description": "Present (true) on a row whose visitors are an estimate.",
}


def _answer(description: str, properties: dict, required=("site", "from", "to")) -> dict:
    """A 200 answer whose body has these keys and no others (tests/test_openapi.py checks
    real answers against it)."""
    schema = {"type": "object", "additionalProperties": False, "required": list(required), "properties": properties}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


SEEN_BODY = {
    "required": True,
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SeenRequest"}}},
}
SEEN_ERRORS = {
    "400": _error("Empty user, items not a list of strings, ..."),
    "401": _error("No valid API key."),
    "413": _error("More than 10,000 items."),
}
READ_ERRORS = {
    "400": _error("A parameter is missing or wrong; the message names it."),
    "401": _error("No valid API key (and no staff session)."),
    "403": _error("The key is for another site."),
    "404": _error("Signed in (no key), but the site is unknown or not one the user may see."),
    "503": _error("Redis is unavailable; retry later."),
}

DOCUMENT = {
    "openapi": "3.1.0",
    "info": {
        "title": "Tally API",
        "version": "1",
        "description": (
            "Ingest visit events and read the numbers. Visitors are HyperLogLog estimates "
            "(0.81% standard error); pageviews, DAU, WAU, MAU, new visitors and retention are exact. "
            'Every error is a JSON body {"error": "..."}.'
        ),
    },
    "components": {
        "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer", "description": "The site's API key."}},
        "schemas": {
            "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
            "PlausibleEvent": {
                "type": "object",
                "required": ["name", "url", "domain"],
                "description": "Plausible's Events API body; the tracker's short names n, u, d, r, p, h are accepted too.",
                "properties": {
                    "name": {"type": "string", "maxLength": 120, "examples": ["pageview"]},
                    "url": {"type": "string", "maxLength": 2048, "examples": ["https://example.com/pricing"]},
                    "domain": {
                        "type": "string",
                        "description": "The site's domain; several, comma-separated, count the event for each.",
                    },
                    "referrer": {"type": ["string", "null"]},
                    "props": {
                        "type": "object",
                        "description": "Custom properties (short name p): broken down by breakdown?property=event:props:NAME.",
                    },
                    "revenue": {
                        "type": "object",
                        "description": 'Short name $: {"currency": ISO 4217 code, "amount": number or decimal text}, summed per goal.',
                    },
                    "interactive": {
                        "type": "boolean",
                        "default": True,
                        "description": "Short name i; false: a custom event that does not end a bounce.",
                    },
                    "w": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 100000,
                        "description": "Screen width in CSS pixels (the screen breakdown).",
                    },
                    "user_id": {
                        "type": "string",
                        "maxLength": 256,
                        "description": "Extension: a stable id from the site's login.",
                    },
                },
            },
            "BatchEvent": {
                "type": "object",
                "required": ["url"],
                "description": "One of visitor, user_id or ip is required.",
                "properties": {
                    "url": {"type": "string", "maxLength": 2048},
                    "ts": {
                        "type": ["string", "null"],
                        "format": "date-time",
                        "description": "ISO-8601; no offset means UTC; default now. Any day from 2000 on, however old, but a day sealed since its rollup (its raw keys expired), which is rejected by name.",
                    },
                    "visitor": {"type": ["string", "null"], "maxLength": 256},
                    "user_id": {"type": ["string", "null"], "maxLength": 256},
                    "ip": {
                        "type": ["string", "null"],
                        "maxLength": 64,
                        "description": "An IPv4 or IPv6 address: identity and country; never stored.",
                    },
                    "user_agent": {"type": ["string", "null"], "maxLength": 2048},
                    "referrer": {"type": ["string", "null"], "maxLength": 2048},
                    "name": {"type": "string", "default": "pageview", "maxLength": 120},
                    "props": {
                        "type": "object",
                        "description": "Custom properties: names and values as text (see /api/event).",
                    },
                    "revenue": {
                        "type": "object",
                        "description": '{"currency": ISO 4217 code, "amount": number or decimal text}.',
                    },
                    "screen_width": {"type": "integer", "minimum": 0, "maximum": 100000},
                    "interactive": {
                        "type": "boolean",
                        "default": True,
                        "description": "false: a custom event that does not end a bounce.",
                    },
                },
            },
            "BatchResult": {
                "type": "object",
                "properties": {
                    "accepted": {"type": "integer"},
                    "bots_dropped": {"type": "integer"},
                    "rejected": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"index": {"type": "integer"}, "error": {"type": "string"}},
                        },
                    },
                },
            },
            "SeenRequest": {
                "type": "object",
                "required": ["user", "items"],
                "additionalProperties": False,
                "properties": {
                    "user": {"type": "string", "minLength": 1, "maxLength": 256},
                    "items": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": settings.MAX_BATCH_EVENTS,
                        "items": {"type": "string", "minLength": 1, "maxLength": 2048},
                    },
                },
            },
            "ExportJob": {
                "type": "object",
                "properties": {
                    "job": {"type": "string"},
                    "state": {"type": "string", "enum": ["queued", "running", "done", "failed"]},
                    "progress": {"type": "number"},
                    "position": {"type": "integer", "description": "Place in line while queued (0: not waiting)."},
                    "message": {"type": "string"},
                    "status_url": {"type": "string"},
                    "file_url": {"type": "string"},
                },
            },
            "SeriesRow": {
                "type": "object",
                "required": ["date"],
                "description": "{date, <metric>: number, or null where it has no value (hours to come, or whose hour keys "
                "have expired on a day that had visitors; a visit metric under several filters)}.",
                "properties": {
                    "date": {
                        "type": "string",
                        "description": "YYYY-MM-DD (the week's Monday, the month's first day) or YYYY-MM-DDTHH:00.",
                    }
                },
                "additionalProperties": {"type": ["number", "null"]},
            },
            "Cohort": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "cohort": {"type": "string", "format": "date"},
                    "size": {"type": "integer"},
                    "retained": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "description": "retained[0] == size; periods not begun are left out.",
                    },
                },
            },
        },
    },
    "paths": {
        "/api/event": {
            "post": {
                "summary": "One event from a browser (Plausible-compatible)",
                "description": "Send as application/json or text/plain, optionally gzip-compressed (Content-Encoding: gzip) or chunked. The visitor is the keyed hash of the client IP and User-Agent, or of user_id (which never marks pages seen here: only Bearer-key APIs do). CORS open, no CSRF.",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/PlausibleEvent"}},
                        "text/plain": {"schema": {"$ref": "#/components/schemas/PlausibleEvent"}},
                    },
                },
                "responses": {
                    "202": {
                        "description": "Accepted: counted, or in Redis in the site's inbox and counted within a fraction of a second (the read API counts the inbox before it answers), or dropped on purpose (then `X-Tally-Dropped: bot`), or kept in the local spool while Redis is down (then `X-Tally-Spooled`).",
                        "headers": {
                            "X-Tally-Dropped": {"schema": {"type": "string"}},
                            "X-Tally-Spooled": {"schema": {"type": "string"}},
                        },
                        "content": {"text/plain": {"schema": {"type": "string", "const": "ok"}}},
                    },
                    "400": _error(
                        "Malformed JSON, wrong types, a bad url, an unknown domain, no User-Agent, or a User-Agent, "
                        "X-Forwarded-For or Content-Encoding with bytes outside visible ASCII (the message names the header)."
                    ),
                    "405": _error("Not POST."),
                    "413": _error("Body over the limit (64 KB)."),
                    **INGEST_ERRORS,
                },
            }
        },
        "/api/v1/events": {
            "post": {
                "summary": "A batch of server-side events",
                "security": [{"apiKey": []}],
                "parameters": [
                    _param(
                        "bots",
                        "`keep` to count bot traffic (dropped by default).",
                        {"type": "string", "enum": ["keep"]},
                    ),
                    {
                        "name": "Idempotency-Key",
                        "in": "header",
                        "description": "Up to 255 visible ASCII characters (a UUID, say; other bytes are refused, 400): the same key "
                        "within 24 hours counts the batch once (a retry answers `Idempotent-Replayed: true`); the same key with "
                        "another body is refused (422).",
                        "schema": {"type": "string", "maxLength": 255},
                    },
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "array",
                                "maxItems": settings.MAX_BATCH_EVENTS,
                                "items": {"$ref": "#/components/schemas/BatchEvent"},
                            }
                        },
                        "application/x-ndjson": {
                            "schema": {"type": "string", "description": "One BatchEvent object per line."}
                        },
                    },
                },
                "responses": {
                    "200": {
                        "description": "Good events counted (or spooled while Redis is down: `X-Tally-Spooled: N`); bad ones listed.",
                        "headers": {
                            "X-Tally-Spooled": {"schema": {"type": "string"}},
                            "Idempotent-Replayed": {"schema": {"type": "string"}},
                        },
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/BatchResult"}}},
                    },
                    "400": _error("Neither a JSON array nor NDJSON."),
                    "401": _error("No valid API key."),
                    "413": _error("Over 10,000 events or 16 MB (once inflated)."),
                    "422": _error("The Idempotency-Key was used with another body."),
                    **INGEST_ERRORS,
                },
            }
        },
        "/api/v1/stats/timeseries": {
            "get": {
                "summary": "Metrics per hour, day, ISO week or month",
                "security": [{"apiKey": []}],
                "parameters": [
                    SITE,
                    *RANGE,
                    FILTERS,
                    params.COMPARE_SERIES.doc(),
                    _param(
                        "metrics",
                        f"Comma-separated. Per day: {', '.join((*METRICS, *VISIT_METRICS))} (default {', '.join(DEFAULT_METRICS)}); "
                        f"per week or month: {', '.join((*PERIOD_METRICS, *VISIT_METRICS))}; per hour: visitors, pageviews. "
                        "The visit metrics are those of the visits that started in the row's days (bounce_rate in percent, "
                        "visit_duration in seconds); with filters, a single value's own (else null).",
                        {"type": "string"},
                    ),
                    params.INTERVAL.doc(),
                ],
                "responses": {
                    "200": _answer(
                        "One row per period, zeros included.",
                        {
                            **PERIOD_ANSWER,
                            "interval": {"type": "string", "enum": ["hour", "day", "week", "month"]},
                            **FILTERED_ANSWER,
                            "comparison": {
                                "type": "object",
                                "description": "With `compare`: the same rows over the period compared with.",
                                "required": ["from", "to", "results"],
                                "properties": {
                                    "from": {"type": "string", "format": "date"},
                                    "to": {"type": "string", "format": "date"},
                                    "results": {"type": "array", "items": {"$ref": "#/components/schemas/SeriesRow"}},
                                },
                            },
                            "results": {"type": "array", "items": {"$ref": "#/components/schemas/SeriesRow"}},
                        },
                        ("site", "from", "to", "interval", "results"),
                    ),
                    **READ_ERRORS,
                },
            }
        },
        "/api/v1/stats/aggregate": {
            "get": {
                "summary": "A period's headline numbers (Plausible's shape)",
                "description": (
                    "visitors: the unique visitors of the whole period, a union, not a sum of days (exact for stable-salt sites: "
                    "the OR of the days' activity bitmaps; a HyperLogLog estimate for daily-salt sites, never below the largest "
                    "day's DAU); pageviews and new_visitors summed; dau the average DAU, rounded to whole people; wau, mau and "
                    "stickiness on the period's last day (today, if the period runs on). visits, bounce_rate (percent of "
                    "visits with at most one pageview and no interactive custom event), visit_duration (mean seconds from a "
                    "visit's first to last event) and views_per_visit count the visits that started in the period (a visit "
                    "ends after 30 minutes without an event); Today compares them with nothing (null change)."
                ),
                "security": [{"apiKey": []}],
                "parameters": [
                    SITE,
                    *RANGE,
                    FILTERS,
                    _param(
                        "metrics",
                        f"Comma-separated, from {', '.join(AGGREGATE_METRICS)} (default all).",
                        {"type": "string"},
                    ),
                    params.COMPARE_TOTALS.doc(),
                ],
                "responses": {
                    "200": _answer(
                        "{metric: {value, change?}}",
                        {
                            **PERIOD_ANSWER,
                            **FILTERED_ANSWER,
                            "compared": {
                                "type": "object",
                                "description": "With `compare`: the dates compared with.",
                                "required": ["from", "to"],
                                "properties": {
                                    "from": {"type": "string", "format": "date"},
                                    "to": {"type": "string", "format": "date"},
                                },
                            },
                            "results": {
                                "type": "object",
                                "additionalProperties": {
                                    "type": "object",
                                    "required": ["value"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "value": {"type": ["number", "null"]},
                                        "change": {
                                            "type": ["number", "null"],
                                            "description": "With `compare`: percent.",
                                        },
                                    },
                                },
                            },
                        },
                        ("site", "from", "to", "results"),
                    ),
                    **READ_ERRORS,
                },
            }
        },
        "/api/v1/stats/funnel": {
            "get": {
                "summary": "A funnel's steps: visitors who reached each",
                "description": (
                    "A funnel (2 to 8 steps, each a page, a page pattern, or event:Name) is defined on the site's admin page. A "
                    "visitor reaches step k when they did it on a day of the range no earlier than the first day they reached "
                    "step k-1: days, not moments, so two steps done on the same day count in either order, and a visitor who "
                    "reached step k-1 before the range starts begins again inside it. Exact from the per-day visitor bitmaps "
                    "(`estimate` says when a step's value had none that day). conversion_rate is in percent of the first step; "
                    "dropoff, the visitors lost since the step before."
                ),
                "security": [{"apiKey": []}],
                "parameters": [
                    SITE,
                    *RANGE,
                    FILTERS,
                    _param("funnel", "The funnel's name.", {"type": "string"}, required=True),
                ],
                "responses": {
                    "200": _answer(
                        "Each step's visitors, in order.",
                        {
                            **PERIOD_ANSWER,
                            "funnel": {"type": "string"},
                            **FILTERED_ANSWER,
                            "steps": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "properties": {
                                        "step": {"type": "string"},
                                        "visitors": {"type": "integer"},
                                        "conversion_rate": {"type": "number"},
                                        "dropoff": {"type": "integer"},
                                    },
                                },
                            },
                        },
                        ("site", "from", "to", "funnel", "filters", "estimate", "steps"),
                    ),
                    **READ_ERRORS,
                },
            }
        },
        "/api/v1/stats/breakdown": {
            "get": {
                "summary": "Rows by one dimension: sources, campaigns, devices, locations, entry and exit pages",
                "description": (
                    "Each visit carries the dimensions of its first event. visitors: a union over the range, exact where "
                    "the value had a visitor bitmap every day it had visitors (a day's first values of each dimension, and "
                    "goals' events), else HyperLogLog (±0.81%), never above the row's visits or pageviews; visits, pageviews, "
                    "bounce_rate (percent), "
                    "visit_duration (mean seconds) and views_per_visit: exact. Rows are ordered by visitors. Direct traffic is "
                    "`Direct / None` under source and referrer. Values past a site's daily quota of distinct values count "
                    "under `(other)` (for event:props:NAME, per property). City values carry their region or country "
                    "(`Springfield, US-IL`); region and city need TALLY_GEO_CITY_DB (without it: 409, unless the range has "
                    "values stored while one was set). exit_page rows have visits (visits that ended there) only; page rows "
                    "visitors and pageviews."
                ),
                "security": [{"apiKey": []}],
                "parameters": [
                    SITE,
                    *RANGE,
                    FILTERS,
                    _param(
                        "property",
                        f"The dimension: one of {', '.join(DIMENSIONS)}, page, goal (rows: goal, visitors = converters, events, "
                        "conversion_rate in percent, revenue per currency), or event:props:NAME (a custom property's values: "
                        "visitors, events; with `event` to keep one event's). Plausible's names are accepted too, as in "
                        "`filters`: their `visit:` or `event:` prefix is dropped (`visit:source`, `visit:utm_campaign`, "
                        "`event:page`, `event:goal`); the answer's `property` and its rows' key are then Tally's (`source`).",
                        {"type": "string"},
                        required=True,
                    ),
                    _param(
                        "event",
                        "With property=event:props:NAME: only this custom event's properties.",
                        {"type": "string"},
                    ),
                    _param(
                        "metrics",
                        "Comma-separated, the row's metrics to return (default all): visit dimensions have visitors, visits, "
                        "pageviews, bounce_rate, visit_duration, views_per_visit; exit_page visits; page visitors, pageviews; "
                        "goal visitors, events, conversion_rate, revenue; custom properties visitors, events.",
                        {"type": "string"},
                    ),
                    params.LIMIT.doc(),
                    params.PAGE.doc(),
                    _param(
                        "search",
                        "Only values containing this text (case-insensitive), for every property (pages' paths, goals' "
                        "names, custom properties' values); kept before paging, so `total` counts them. At most 200 characters "
                        "are used.",
                        {"type": "string"},
                    ),
                ],
                "responses": {
                    "200": _answer(
                        "One page of rows, and how many rows there are in all (`total`: those `search` kept).",
                        {
                            **PERIOD_ANSWER,
                            "property": {"type": "string"},
                            "page": {"type": "integer"},
                            **FILTERED_ANSWER,
                            "total": {"type": "integer"},
                            "results": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "description": "{<property>: value, <metric>: number or null, ...}; `revenue`: {currency: amount}.",
                                    "properties": {"estimate": ROW_ESTIMATE},
                                },
                            },
                        },
                        ("site", "from", "to", "property", "page", "total", "results"),
                    ),
                    **READ_ERRORS,
                    "409": _error(
                        "property=region or city, no city database is configured (TALLY_GEO_CITY_DB is not set) and the "
                        "range has no regions or cities stored from a time one was; the message names the setting."
                    ),
                },
            }
        },
        "/api/v1/stats/near": {
            "get": {
                "summary": "Visitors within some distance of a place (with a city database)",
                "description": (
                    "Needs TALLY_GEO_CITY_DB (without it: 409, unless the range has cities stored while one was set). "
                    "Ingest keeps each day's cities at the city database's coordinates for the city "
                    "(never a visitor's own position); this finds the cities within `km` of the point (GEOSEARCH) and counts "
                    "their visitors over the range as one union (HyperLogLog, ±0.81%). Cities past a day's quota of values "
                    "are not placed. A day's places are raw day keys: they expire with its others (the site's "
                    "keep_daily_days after the rollup), while breakdown?property=city still lists its cities. Such days "
                    "are left out of the count and named (`expired`, `message`); a range of such days only is a 410."
                ),
                "security": [{"apiKey": []}],
                "parameters": [
                    SITE,
                    *RANGE,
                    params.LATITUDE.doc(),
                    params.LONGITUDE.doc(),
                    params.RADIUS.doc(),
                ],
                "responses": {
                    "200": _answer(
                        "The union of the visitors, and each city's (nearest first).",
                        {
                            **PERIOD_ANSWER,
                            "lat": {"type": "number"},
                            "lon": {"type": "number"},
                            "km": {"type": "number"},
                            "visitors": {"type": "integer"},
                            "cities": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "properties": {
                                        "city": {"type": "string"},
                                        "km": {"type": "number"},
                                        "visitors": {"type": "integer"},
                                    },
                                },
                            },
                            "counted": {
                                **DAY_RUNS,
                                "description": "The days the numbers count (runs of consecutive days): "
                                "the whole range unless some days' locations have expired.",
                            },
                            "expired": {
                                **DAY_RUNS,
                                "description": "The days left out: they had cities, whose locations are no "
                                "longer kept (expired with the day's raw keys); usually empty.",
                            },
                            "message": {
                                "type": "string",
                                "description": "With days in `expired`: which days were counted, "
                                "which were not, and why.",
                            },
                        },
                        ("site", "from", "to", "lat", "lon", "km", "visitors", "cities", "counted", "expired"),
                    ),
                    **READ_ERRORS,
                    "409": _error(
                        "No city database is configured (TALLY_GEO_CITY_DB is not set) and the range has no cities stored "
                        "from a time one was; the message names the setting."
                    ),
                    "410": _error(
                        "Every day of the range had cities whose locations are no longer kept (expired with the days' raw "
                        "keys, the site's keep_daily_days after the rollup); the message names the days."
                    ),
                },
            }
        },
        "/api/v1/stats/pages": {
            "get": {
                "summary": "Top pages by unique visitors over the range",
                "security": [{"apiKey": []}],
                "parameters": [
                    SITE,
                    *RANGE,
                    FILTERS,
                    params.PAGES.doc(),
                ],
                "responses": {
                    "200": _answer(
                        "Pages with visitors (a union over the range: exact for a page with a visitor bitmap every day it had "
                        "visitors, else HLL) and pageviews (null under filters: they are counted per page, not per audience).",
                        {
                            **PERIOD_ANSWER,
                            **FILTERED_ANSWER,
                            "results": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "properties": {
                                        "page": {"type": "string"},
                                        "visitors": {"type": "integer"},
                                        "pageviews": {"type": ["integer", "null"]},
                                        "estimate": ROW_ESTIMATE,
                                    },
                                },
                            },
                        },
                        ("site", "from", "to", "results"),
                    ),
                    **READ_ERRORS,
                },
            }
        },
        "/api/v1/stats/retention": {
            "get": {
                "summary": "Retention cohorts (exact)",
                "security": [{"apiKey": []}],
                "parameters": [
                    SITE,
                    *RANGE,
                    FILTERS,
                    params.UNIT.doc(),
                    _param(
                        "periods",
                        f"Largest n in retained (at most {DAY_PERIODS} days or {WEEK_PERIODS} weeks).",
                        {"type": "integer", "minimum": 0, "maximum": DAY_PERIODS},
                    ),
                ],
                "responses": {
                    "200": _answer(
                        "Cohort = visitors first seen that day (week); retained[n] = of them, active n days (weeks) later.",
                        {
                            **PERIOD_ANSWER,
                            "unit": {"type": "string", "enum": ["day", "week"]},
                            "periods": {"type": "integer"},
                            **FILTERED_ANSWER,
                            "cohorts": {"type": "array", "items": {"$ref": "#/components/schemas/Cohort"}},
                        },
                        ("site", "from", "to", "unit", "periods", "cohorts"),
                    ),
                    **READ_ERRORS,
                },
            }
        },
        "/api/v1/stats/realtime": {
            "get": {
                "summary": "Unique visitors over the last five minutes",
                "security": [{"apiKey": []}],
                "parameters": [SITE],
                "responses": {
                    "200": _answer(
                        "Union of the per-minute HLLs.",
                        {"site": {"type": "string"}, "visitors": {"type": "integer"}, "minutes": {"type": "integer"}},
                        ("site", "visitors", "minutes"),
                    ),
                    **READ_ERRORS,
                },
            }
        },
        "/api/v1/seen": {
            "post": {
                "summary": "Mark items seen by a user (scalable Bloom filter)",
                "security": [{"apiKey": []}],
                "requestBody": SEEN_BODY,
                "responses": {
                    "200": {
                        "description": "added[i]: true if item i was new (at least one bit newly set).",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"added": {"type": "array", "items": {"type": "boolean"}}},
                                }
                            }
                        },
                    },
                    "409": _error(
                        "The user's filter cannot take the items: it is full (the site's filters do not scale, or this one reached the size limit of 16 MB a filter), or the site's filters together are at their memory budget (no new filter is made and none grows until filters expire or the budget is raised; the items the filter could take are added); or the site's filter settings make a first sub-filter past the size limit (set before the admin refused such settings). The message says which."
                    ),
                    **SEEN_ERRORS,
                },
            }
        },
        "/api/v1/unseen": {
            "post": {
                "summary": "The items a user has not seen yet, in the order given",
                "description": "Seen items are never returned; an unseen item is wrongly held back at about the configured error rate (a Bloom filter's false positives).",
                "security": [{"apiKey": []}],
                "requestBody": SEEN_BODY,
                "responses": {
                    "200": {
                        "description": "The unseen items.",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"items": {"type": "array", "items": {"type": "string"}}},
                                }
                            }
                        },
                    },
                    **SEEN_ERRORS,
                },
            }
        },
        "/api/v1/recommendations": {
            "get": {
                "summary": "Top pages of the last days that the user has probably not seen",
                "description": "Pageviews sent with a user_id mark their page seen in that user's filter. A user without one (none yet, or none made because the site's filters are at their memory budget) has seen nothing: the plain top pages.",
                "security": [{"apiKey": []}],
                "parameters": [
                    SITE,
                    _param("user", "The site's user id.", {"type": "string"}, required=True),
                    params.RECOMMENDED.doc(),
                    params.RECOMMEND_DAYS.doc(),
                ],
                "responses": {
                    "200": {
                        "description": "Pages with their visitors and pageviews.",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"pages": {"type": "array", "items": {"type": "object"}}},
                                }
                            }
                        },
                    },
                    **READ_ERRORS,
                },
            }
        },
        "/api/v1/reports/{fmt}": {
            "get": {
                "summary": "Export a report: daily metrics, top pages, retention, breakdowns, goals, custom properties",
                "description": "Tables: summary, daily, pages, retention_day and retention_week (stable-salt sites), one per visit "
                "dimension and exit_page, goals, and prop_NAME for each custom property sent in the period (the rows of "
                "breakdown property=event:props:NAME, the first column headed by the property's full name; NAME with all but "
                "letters, digits, _ and - as _, cut to 31 characters, numbered ~2, ~3... when two names meet whatever their case). "
                "goals has a row per goal and revenue currency: revenue a number (the breakdown's amount), currency its code, "
                "both empty without revenue. With filters, breakdowns and goals have visitors (and conversion rates) only, and "
                "exit_page and the custom properties have no table (they count visits or events, which filters cannot narrow). "
                "The region and city tables, when empty because no city database is configured (TALLY_GEO_CITY_DB, and "
                "none was while the period's values were recorded: the breakdown's 409), carry a note saying so: a last row "
                "of one cell in CSV and XLSX, the table's `note` in JSON. "
                "Up to 31 days the file comes at once; longer periods (or async=1) answer 202 with a job. "
                "In CSV and XLSX, text cells and headers starting with = + - @ are prefixed with ' (no spreadsheet formulas "
                "from public strings); numbers stay numbers.",
                "security": [{"apiKey": []}],
                "parameters": [
                    {
                        "name": "fmt",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "enum": ["csv", "xlsx", "json"]},
                        "description": "csv: a zip of one CSV per table (NAME.csv); xlsx: a sheet per table; json: {site, from, to, tables: {NAME: {columns, rows, note (only where one is due)}}}.",
                    },
                    SITE,
                    *RANGE,
                    _param("async", "1 to run as a job whatever the length.", {"type": "string", "enum": ["1"]}),
                    FILTERS,
                ],
                "responses": {
                    "200": {
                        "description": "The file.",
                        "content": {
                            "application/zip": {},
                            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": {},
                            "application/json": {},
                        },
                    },
                    "202": {
                        "description": "A background job: poll status_url, then fetch file_url.",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ExportJob"}}},
                    },
                    **READ_ERRORS,
                },
            }
        },
        "/api/v1/reports/jobs/{job}": {
            "get": {
                "summary": "An export job's state and progress",
                "security": [{"apiKey": []}],
                "parameters": [{"name": "job", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {
                    "200": {
                        "description": "queued (with its place in line), running, done or failed.",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ExportJob"}}},
                    },
                    "401": _error("No valid API key."),
                    "404": _error("No such job (kept 24 hours), or another site's."),
                },
            }
        },
        "/api/v1/reports/jobs/{job}/file": {
            "get": {
                "summary": "An export job's file (kept 24 hours)",
                "security": [{"apiKey": []}],
                "parameters": [{"name": "job", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {
                    "200": {"description": "The file."},
                    "404": _error("No such job."),
                    "409": _error("Not ready yet."),
                    "410": _error("Expired."),
                },
            }
        },
        "/api/v1/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {}}}},
            }
        },
    },
}


@require_GET
def document(request):
    return json_response(DOCUMENT, headers={"Access-Control-Allow-Origin": "*"})
