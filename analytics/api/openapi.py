"""The OpenAPI 3.1 document for Tally's ingest and read API, served at /api/v1/openapi.json.

The paths table is written here; what it lists comes from the code: every parameter is a
declaration of params.py (`doc()`), every JSON answer a model of responses.py, and the
event bodies the models that validate them (analytics/ingest/schemas.py), their schemas
under components/schemas. tests/test_openapi.py checks that every API route is here and
that the document is valid; tests/test_api_answers.py, that real answers have exactly the
keys the models say.
"""

from django.conf import settings
from django.views.decorators.http import require_GET
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, models_json_schema

from ..ingest import schemas
from . import params, params_v1, plausible_v2, responses
from .http import json_response

REF = "#/components/schemas/{model}"


class _Schema(GenerateJsonSchema):
    """Pydantic's JSON schemas as the document shows them: no title on every field, and no
    `"default": null` on a key an answer has only sometimes (absent is not null)."""

    def field_title_should_be_set(self, schema) -> bool:
        return False

    def default_schema(self, schema):
        if schema.get("default", ...) is None:
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)


ANSWERS: list[type[BaseModel]] = []  # (every model an answer names: their schemas go under components)


def _json(model: type[BaseModel]) -> dict:
    if model not in ANSWERS:
        ANSWERS.append(model)
    return {"application/json": {"schema": {"$ref": REF.format(model=model.__name__)}}}


def _answer(description: str, model: type[BaseModel], **more) -> dict:
    """An answer whose body is `model`'s."""
    return {"description": description, "content": _json(model), **more}


def _error(description: str) -> dict:
    return _answer(description, responses.Error)


def _with_words(schema: dict, description: str, fields: dict[str, dict]) -> dict:
    """A request body's schema from the model that validates it, with what a validator does
    not say: its words, and (a TypedDict's) defaults."""
    unknown = set(fields) - set(schema["properties"])
    if unknown:
        raise ValueError(f"no such fields to describe: {', '.join(sorted(unknown))}")
    properties = {name: {**sub, **fields.get(name, {})} for name, sub in schema["properties"].items()}
    return {**schema, "description": description, "properties": properties}


PLAUSIBLE_EVENT = _with_words(
    schemas.PlausibleEvent.model_json_schema(schema_generator=_Schema),
    "Plausible's Events API body; the tracker's short names are accepted too: n, u, d, r, p (or m), $, i, h, w.",
    {
        "name": {"examples": ["pageview"]},
        "url": {"examples": ["https://example.com/pricing"]},
        "domain": {"description": "The site's domain; several, comma-separated, count the event for each."},
        "props": {
            "description": "Custom properties: an object of names to strings, numbers or booleans (or its JSON "
            "text), broken down by breakdown?property=event:props:NAME."
        },
        "revenue": {"description": '{"currency": ISO 4217 code, "amount": number or decimal text}, summed per goal.'},
        "interactive": {"description": "false: a custom event that does not end a bounce."},
        "hashMode": {"description": "The site routes by the URL's #fragment: the page keeps it."},
        "user_id": {"description": "Extension: a stable id from the site's login."},
        "screen_width": {"description": "Screen width in CSS pixels (the screen breakdown)."},
    },
)
BATCH_EVENT = _with_words(
    schemas.batch_event_adapter.json_schema(schema_generator=_Schema),
    "One of visitor, user_id or ip is required.",
    {
        "ts": {
            "description": "ISO-8601; no offset means UTC; default now. Any day from 2000 on, however old, but a "
            "day sealed since its rollup (its raw keys expired, or expire within ten minutes), which is "
            "rejected by name."
        },
        "ip": {"description": "An IPv4 or IPv6 address: identity and country; never stored."},
        "name": {"default": "pageview"},
        "props": {"description": "Custom properties: names and values as text (see /api/event)."},
        "revenue": {"description": '{"currency": ISO 4217 code, "amount": number or decimal text}.'},
        "interactive": {"default": True, "description": "false: a custom event that does not end a bounce."},
    },
)
SEEN_REQUEST = {  # (the recommendations app's model, which the engine does not import)
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
}

KEY: list[dict] = [{"apiKey": []}]  # (the site's Bearer key)
RANGE = [p.doc() for p in params.RANGE]
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}}
INGEST_ERRORS = {
    "408": _error("The body took longer than the server waits for (10 s by default)."),
    "415": _error("A Content-Encoding other than gzip."),
    "429": {**_error("Over a rate limit (per client IP, or the site's); nothing was counted."), "headers": RETRY_AFTER},
    "503": _error("Redis is unavailable and the local spool could not be written; retry later."),
}
READ_ERRORS = {
    "400": _error("A parameter is missing or wrong; the message names it."),
    "401": _error("No valid API key (and no staff session)."),
    "403": _error("The key is for another site."),
    "404": _error("Signed in (no key), but the site is unknown or not one the user may see."),
    "503": _error("Redis is unavailable; retry later."),
}
SEEN_BODY = {"required": True, "content": {"application/json": {"schema": {"$ref": REF.format(model="SeenRequest")}}}}
SEEN_ERRORS = {
    "400": _error("Empty user, items not a list of strings, ..."),
    "401": _error("No valid API key."),
    "413": _error("More than 10,000 items."),
}


def _read(summary: str, parameters: list, answer: dict, description: str = "", errors: dict | None = None) -> dict:
    """A read endpoint (GET, the site's key): its 200 answer, READ_ERRORS and `errors`."""
    return {
        "get": {
            "summary": summary,
            **({"description": description} if description else {}),
            "security": KEY,
            "parameters": [_site_or_site_id(parameters), *parameters],
            "responses": {"200": answer, **READ_ERRORS, **(errors or {})},
        }
    }


def _site_or_site_id(parameters: list) -> dict:
    """`site`: required, unless the path also takes Plausible's `site_id` in its place (one of
    the two names the site: a request naming site_id is Plausible's v1, params_v1.py)."""
    site = params.SITE.doc()
    if any(p.get("name") == params_v1.SITE_ID.name for p in parameters):
        site = {**site, "required": False, "description": site["description"] + " Or `site_id` (Plausible's v1)."}
    return site


PATHS = {
    "/api/event": {
        "post": {
            "summary": "One event from a browser (Plausible-compatible)",
            "description": "Send as application/json or text/plain, optionally gzip-compressed (Content-Encoding: "
            "gzip) or chunked. The visitor is the keyed hash of the client IP and User-Agent, or of user_id (which "
            "never marks pages seen here: only Bearer-key APIs do). CORS open, no CSRF.",
            "requestBody": {
                "required": True,
                "content": {
                    kind: {"schema": {"$ref": REF.format(model="PlausibleEvent")}}
                    for kind in ("application/json", "text/plain")
                },
            },
            "responses": {
                "202": {
                    "description": "Accepted: counted, or in Redis in the site's inbox and counted within a fraction "
                    "of a second (the read API counts the inbox before it answers), or dropped on purpose (then "
                    "`X-Tally-Dropped: bot`, or `exclusion` where every site it names excludes it), or kept in the "
                    "local spool while Redis is down (then `X-Tally-Spooled`).",
                    "headers": {
                        "X-Tally-Dropped": {"schema": {"type": "string"}},
                        "X-Tally-Spooled": {"schema": {"type": "string"}},
                    },
                    "content": {"text/plain": {"schema": {"type": "string", "const": "ok"}}},
                },
                "400": _error(
                    "Malformed JSON, wrong types, a bad url, an unknown domain, no User-Agent, or a User-Agent, "
                    "X-Forwarded-For or Content-Encoding with bytes outside visible ASCII (the message names the "
                    "header)."
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
            "security": KEY,
            "parameters": [params.BOTS.doc(), params.IDEMPOTENCY_KEY.doc()],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "array",
                            "maxItems": settings.MAX_BATCH_EVENTS,
                            "items": {"$ref": REF.format(model="BatchEvent")},
                        }
                    },
                    "application/x-ndjson": {
                        "schema": {"type": "string", "description": "One BatchEvent object per line."}
                    },
                },
            },
            "responses": {
                "200": _answer(
                    "Good events counted (or spooled while Redis is down: `X-Tally-Spooled: N`); bad ones listed.",
                    responses.BatchResult,
                    headers={
                        "X-Tally-Spooled": {"schema": {"type": "string"}},
                        "Idempotent-Replayed": {"schema": {"type": "string"}},
                    },
                ),
                "400": _error("Neither a JSON array nor NDJSON."),
                "401": _error("No valid API key."),
                "413": _error("Over 10,000 events or 16 MB (once inflated)."),
                "422": _error("The Idempotency-Key was used with another body."),
                **INGEST_ERRORS,
            },
        }
    },
    "/api/v1/stats/timeseries": _read(
        "Metrics per hour, day, ISO week or month",
        [
            *RANGE,
            params.FILTERS.doc(),
            params.COMPARE_SERIES.doc(),
            params.SERIES_METRICS.doc(),
            params.INTERVAL.doc(),
            params_v1.SITE_ID.doc(),
        ],
        _answer("One row per period, zeros included.", responses.TimeseriesAnswer),
    ),
    "/api/v1/stats/aggregate": _read(
        "A period's headline numbers (Plausible's shape)",
        [
            *RANGE,
            params.FILTERS.doc(),
            params.TOTALS_METRICS.doc(),
            params.COMPARE_TOTALS.doc(),
            params_v1.SITE_ID.doc(),
        ],
        _answer("{metric: {value, change?}}", responses.AggregateAnswer),
        "visitors: the unique visitors of the whole period, a union, not a sum of days (exact for stable-salt "
        "sites: the OR of the days' activity bitmaps; a HyperLogLog estimate for daily-salt sites, never below the "
        "largest day's DAU); pageviews and new_visitors summed; dau the average DAU, rounded to whole people; wau, "
        "mau and stickiness on the period's last day (today, if the period runs on). visits, bounce_rate (percent "
        "of visits with at most one pageview and no interactive custom event), visit_duration (mean seconds from a "
        "visit's first to last event) and views_per_visit count the visits that started in the period (a visit "
        "ends after 30 minutes without an event); Today compares them with nothing (null change).",
    ),
    "/api/v1/stats/funnel": _read(
        "A funnel's steps: visitors who reached each",
        [*RANGE, params.FILTERS.doc(), params.FUNNEL.doc()],
        _answer("Each step's visitors, in order.", responses.FunnelAnswer),
        "A funnel (2 to 8 steps, each a page, a page pattern, or event:Name) is defined on the site's admin page. "
        "A visitor reaches step k when they did it on a day of the range no earlier than the first day they reached "
        "step k-1: days, not moments, so two steps done on the same day count in either order, and a visitor who "
        "reached step k-1 before the range starts begins again inside it. Exact from the per-day visitor bitmaps "
        "(`estimate` says when a step's value had none that day). conversion_rate is in percent of the first "
        "step; dropoff, the visitors lost since the step before.",
    ),
    "/api/v1/stats/breakdown": _read(
        "Rows by one dimension: sources, campaigns, devices, locations, entry and exit pages",
        [
            *RANGE,
            params.FILTERS.doc(),
            params.PROPERTY.doc(),
            params.EVENT.doc(),
            params.ROW_METRICS.doc(),
            params.LIMIT.doc(),
            params.PAGE.doc(),
            params.SEARCH.doc(),
            params_v1.SITE_ID.doc(),
        ],
        _answer(
            "One page of rows, and how many rows there are in all (`total`: those `search` kept).",
            responses.BreakdownAnswer,
        ),
        "Each visit carries the dimensions of its first event. visitors: a union over the range, exact where the "
        "value had a visitor bitmap every day it had visitors (a day's first values of each dimension, and goals' "
        "events), else HyperLogLog (±0.81%), never above the row's visits or pageviews; visits, pageviews, "
        "bounce_rate (percent), visit_duration (mean seconds) and views_per_visit: exact. Rows are ordered by "
        "visitors. Direct traffic is `Direct / None` under source and referrer. Values past a site's daily quota "
        "of distinct values count under `(other)` (for event:props:NAME, per property). City values carry their "
        "region or country (`Springfield, US-IL`); region and city need TALLY_GEO_CITY_DB (without it: 409, unless "
        "the range has values stored while one was set). exit_page rows have visits (visits that ended there) "
        "only; page rows visitors and pageviews.",
        {
            "409": _error(
                "property=region or city, no city database is configured (TALLY_GEO_CITY_DB is not set) and the "
                "range has no regions or cities stored from a time one was; the message names the setting."
            )
        },
    ),
    "/api/v1/stats/near": _read(
        "Visitors within some distance of a place (with a city database)",
        [*RANGE, params.LATITUDE.doc(), params.LONGITUDE.doc(), params.RADIUS.doc()],
        _answer("The union of the visitors, and each city's (nearest first).", responses.NearAnswer),
        "Needs TALLY_GEO_CITY_DB (without it: 409, unless the range has cities stored while one was set). Ingest "
        "keeps each day's cities at the city database's coordinates for the city (never a visitor's own position); "
        "this finds the cities within `km` of the point (GEOSEARCH) and counts their visitors over the range as one "
        "union (HyperLogLog, ±0.81%). Cities past a day's quota of values are not placed. A day's places are raw "
        "day keys: they expire with its others (the site's keep_daily_days after the rollup), while "
        "breakdown?property=city still lists its cities. Such days are left out of the count and named "
        "(`expired`, `message`); a range of such days only is a 410.",
        {
            "409": _error(
                "No city database is configured (TALLY_GEO_CITY_DB is not set) and the range has no cities stored "
                "from a time one was; the message names the setting."
            ),
            "410": _error(
                "Every day of the range had cities whose locations are no longer kept (expired with the days' raw "
                "keys, the site's keep_daily_days after the rollup); the message names the days."
            ),
        },
    ),
    "/api/v1/stats/pages": _read(
        "Top pages by unique visitors over the range",
        [*RANGE, params.FILTERS.doc(), params.PAGES.doc()],
        _answer(
            "Pages with visitors (a union over the range: exact for a page with a visitor bitmap every day it had "
            "visitors, else HLL) and pageviews (null under filters: they are counted per page, not per audience).",
            responses.PagesAnswer,
        ),
    ),
    "/api/v1/stats/retention": _read(
        "Retention cohorts (exact)",
        [*RANGE, params.FILTERS.doc(), params.UNIT.doc(), params.PERIODS.doc()],
        _answer(
            "Cohort = visitors first seen that day (week); retained[n] = of them, active n days (weeks) later.",
            responses.RetentionAnswer,
        ),
    ),
    "/api/v1/stats/dropped": _read(
        "Events not counted over the range, and why",
        RANGE,
        _answer(
            "Bots by User-Agent, data-centre addresses, referrer spam, inhuman rates and the site's own exclusions: "
            "each a count, with the site's switches for them (see the site's Advanced settings).",
            responses.DroppedAnswer,
        ),
    ),
    "/api/v1/stats/realtime": _read(
        "Unique visitors over the last five minutes",
        [],
        _answer("Union of the per-minute HLLs.", responses.RealtimeAnswer),
    ),
    "/api/v1/stats/realtime/visitors": {
        "get": {
            "summary": "Plausible's Stats API v1 realtime visitors: a bare number",
            "security": KEY,
            "parameters": [{**params_v1.SITE_ID.doc(), "required": True}],
            "responses": {
                "200": {
                    "description": "The unique visitors of the last five minutes, as /api/v1/stats/realtime counts.",
                    "content": {"application/json": {"schema": {"type": "integer", "minimum": 0}}},
                },
                **{code: READ_ERRORS[code] for code in ("400", "401", "503")},
            },
        }
    },
    "/api/v1/seen": {
        "post": {
            "summary": "Mark items seen by a user (scalable Bloom filter)",
            "security": KEY,
            "requestBody": SEEN_BODY,
            "responses": {
                "200": _answer("Which items were new.", responses.SeenAnswer),
                "409": _error(
                    "The user's filter cannot take the items: it is full (the site's filters do not scale, or this "
                    "one reached the size limit of 16 MB a filter), or the site's filters together are at their "
                    "memory budget (no new filter is made and none grows until filters expire or the budget is "
                    "raised; the items the filter could take are added); or the site's filter settings make a first "
                    "sub-filter past the size limit (set before the admin refused such settings). The message says "
                    "which."
                ),
                **SEEN_ERRORS,
            },
        }
    },
    "/api/v1/unseen": {
        "post": {
            "summary": "The items a user has not seen yet, in the order given",
            "description": "Seen items are never returned; an unseen item is wrongly held back at about the "
            "configured error rate (a Bloom filter's false positives).",
            "security": KEY,
            "requestBody": SEEN_BODY,
            "responses": {"200": _answer("The unseen items.", responses.UnseenAnswer), **SEEN_ERRORS},
        }
    },
    "/api/v1/recommendations": _read(
        "Top pages of the last days that the user has probably not seen",
        [params.USER.doc(), params.RECOMMENDED.doc(), params.RECOMMEND_DAYS.doc()],
        _answer("Pages with their visitors and pageviews.", responses.RecommendationsAnswer),
        "Pageviews sent with a user_id mark their page seen in that user's filter. A user without one (none yet, "
        "or none made because the site's filters are at their memory budget) has seen nothing: the plain top pages.",
    ),
    "/api/v1/reports/{fmt}": {
        "get": {
            "summary": "Export a report: daily metrics, top pages, retention, breakdowns, goals, custom properties",
            "description": "Tables: summary, daily, pages, retention_day and retention_week (stable-salt sites), "
            "one per visit dimension and exit_page, goals, and prop_NAME for each custom property sent in the period "
            "(the rows of breakdown property=event:props:NAME, the first column headed by the property's full name; "
            "NAME with all but letters, digits, _ and - as _, cut to 31 characters, numbered ~2, ~3... when two "
            "names meet whatever their case). goals has a row per goal and revenue currency: revenue a number (the "
            "breakdown's amount), currency its code, both empty without revenue. With filters, breakdowns and goals "
            "have visitors (and conversion rates) only, and exit_page and the custom properties have no table (they "
            "count visits or events, which filters cannot narrow). The region and city tables, when empty because no "
            "city database is configured (TALLY_GEO_CITY_DB, and none was while the period's values were recorded: "
            "the breakdown's 409), carry a note saying so: a last row of one cell in CSV and XLSX, the table's "
            "`note` in JSON. Up to 31 days the file comes at once; longer periods (or async=1) answer 202 with a "
            "job. In CSV and XLSX, text cells and headers starting with = + - @ are prefixed with ' (no spreadsheet "
            "formulas from public strings); numbers stay numbers.",
            "security": KEY,
            "parameters": [
                params.FORMAT.doc(),
                params.SITE.doc(),
                *RANGE,
                params.ASYNC.doc(),
                params.FILTERS.doc(),
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
                "202": _answer("A background job: poll status_url, then fetch file_url.", responses.NewExport),
                **READ_ERRORS,
            },
        }
    },
    "/api/v1/reports/jobs/{job}": {
        "get": {
            "summary": "An export job's state and progress",
            "security": KEY,
            "parameters": [params.JOB.doc()],
            "responses": {
                "200": _answer("queued (with its place in line), running, done or failed.", responses.ExportJob),
                "401": _error("No valid API key."),
                "404": _error("No such job (kept 24 hours), or another site's."),
            },
        }
    },
    "/api/v1/reports/jobs/{job}/file": {
        "get": {
            "summary": "An export job's file (kept 24 hours)",
            "security": KEY,
            "parameters": [params.JOB.doc()],
            "responses": {
                "200": {"description": "The file."},
                "404": _error("No such job."),
                "409": _error("Not ready yet."),
                "410": _error("Expired."),
            },
        }
    },
    "/api/v2/query": {
        "post": {
            "summary": "Plausible's Stats API v2 query: aggregate, timeseries or breakdown in Plausible's shapes",
            "description": "Send what a Plausible client sends (only the base URL and key change); the numbers are "
            "those of /api/v1/stats/* for the same question (the same query runner). No dimension: one row of totals; "
            "a time dimension (time, time:hour up to 2 days, time:day, time:week, time:month): a row per period with "
            "data (include.time_labels lists them all); one other dimension: a row per value. Filters: is, is_not "
            "and contains (case-insensitive), all joined by and, on the visit dimensions, event:page and event:goal "
            "(is, is_not). Metrics: visitors, visits, pageviews, views_per_visit, bounce_rate, visit_duration; events "
            "and conversion_rate by goal; percentage by a dimension; under filters, breakdown rows have visitors (and "
            "percentage, or conversion_rate by goal) only. What Tally cannot answer (two dimensions, or, not, "
            "contains_not, matches, modifiers, a metric a row does not have) is a 400 saying so. `meta` carries "
            "Tally's marks: `estimate`, and `estimates` (metric: why).",
            "security": KEY,
            "requestBody": {"required": True, "content": _json(plausible_v2.QueryBody)},
            "responses": {
                "200": _answer("Rows, meta and the query as resolved.", responses.QueryAnswer),
                "400": _error("The body is no JSON, or a field is wrong or not answerable; the message names it."),
                "401": _error("No valid API key."),
                "404": _error("site_id is not the API key's site."),
                "413": _error("Body over 64 KB."),
                "503": _error("Redis is unavailable; retry later."),
            },
        }
    },
    "/api/v1/openapi.json": {
        "get": {
            "summary": "This document",
            "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {}}}},
        }
    },
}

_, _DEFINED = models_json_schema([(m, "validation") for m in ANSWERS], ref_template=REF, schema_generator=_Schema)

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
            "PlausibleEvent": PLAUSIBLE_EVENT,
            "BatchEvent": BATCH_EVENT,
            "SeenRequest": SEEN_REQUEST,
            **_DEFINED["$defs"],
        },
    },
    "paths": PATHS,
}


@require_GET
def document(request):
    return json_response(DOCUMENT, headers={"Access-Control-Allow-Origin": "*"})
