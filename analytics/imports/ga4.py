"""Google Analytics 4 through its BigQuery export: the rows of the `events_YYYYMMDD`
tables as newline-delimited JSON (plain or .gz), e.g. from
`bq extract --destination_format NEWLINE_DELIMITED_JSON 'project:analytics_123.events_*' gs://...`.

One row is one event (BigQuery writes INT64 values as JSON strings; both are read):

    event_timestamp        µs since the epoch (UTC)            the event's time
    event_name             page_view                           a pageview
                           session_start, first_visit,         skipped (AUTOMATIC: Tally
                           user_engagement, scroll             counts visits, engagement itself)
                           anything else (click, purchase...)  a custom event, interactive
    user_pseudo_id         GA's client id                      the visitor (identity_source's
                                                               `visitor`, stable for that id);
                                                               rows without one (consent mode's
                                                               cookieless pings) are skipped
    event_params           page_location                       the page (path, percent-decoded)
                                                               and the UTM tags of its query
                           page_referrer                       the referrer (source, channel)
                           other string values                 the custom event's properties
                                                               (within Tally's limits)
    collected_traffic_source.manual_*                          UTM tags, when page_location has none
    device                 web_info.browser(_version),         browser, OS, their versions, device
                           operating_system(_version), category
    geo                    country (an English name), region,  country (ISO code), region, city
                           city
    ecommerce              purchase_revenue (+ the `currency`  a purchase's revenue (else
                           param), purchase_revenue_in_usd     in USD)

Not mapped: the hostname (Tally keeps paths, not hosts: an export of several sites counts
them as one), user_id (the visitor is user_pseudo_id), page titles, screen sizes (the
export has none), and numeric event parameters (only string values become properties).
"""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from urllib.parse import urlencode

import orjson

from ..ingest import logs, schemas
from ..ingest.identity import identity_source
from ..ingest.record import PAGEVIEW, Hit
from . import fields
from .countries import country_code
from .replay import Reader, Summary

AUTOMATIC = frozenset({"session_start", "first_visit", "user_engagement", "scroll"})
# Parameters GA4 sets on every event (pages, sessions, engagement, attribution): not properties
BOOKKEEPING = frozenset(
    {
        "page_location",
        "page_referrer",
        "page_title",
        "ga_session_id",
        "ga_session_number",
        "engagement_time_msec",
        "session_engaged",
        "engaged_session_event",
        "entrances",
        "ignore_referrer",
        "batch_page_id",
        "batch_ordering_id",
        "debug_mode",
        "campaign",
        "campaign_id",
        "source",
        "medium",
        "term",
        "content",
        "gclid",
        "dclid",
        "srsltid",
        "currency",
        "value",
        "synthetic_bundle",
        "firebase_conversion",
    }
)
UTM = (
    ("utm_source", "manual_source"),
    ("utm_medium", "manual_medium"),
    ("utm_campaign", "manual_campaign_name"),
    ("utm_term", "manual_term"),
    ("utm_content", "manual_content"),
)
MAX_NAME = 120
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class BadRow(ValueError):
    pass


def read(path: Path, site_host: str, summary: Summary) -> Iterator[Hit]:
    for number, line in enumerate(logs.open_lines(path), 1):
        summary.position = number
        if not line.strip():
            continue
        summary.records += 1
        try:
            hit = event(orjson.loads(line), site_host, summary)
        except (orjson.JSONDecodeError, BadRow, schemas.BadEvent):
            summary.bad(number)
            continue
        if hit is not None:
            yield hit


def check(path: Path):
    """A GA4 export's first row is a JSON object with an event_name."""
    for line in logs.open_lines(path):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            row = None
        if not isinstance(row, dict) or "event_name" not in row:
            raise logs.Unreadable(
                f"{path}: not a GA4 BigQuery export (newline-delimited JSON rows with event_name), "
                f"its first line starts {line[:40]!r}"
            )
        return


def event(row, site_host: str, summary: Summary) -> Hit | None:
    """The Hit of one exported row; None for a row skipped (counted in `summary`); BadRow
    (or schemas.BadEvent) for one that is not a GA4 event."""
    if not isinstance(row, dict):
        raise BadRow("not an object")
    name, ts = row.get("event_name"), _time(row.get("event_timestamp"))
    if not isinstance(name, str) or not name:
        raise BadRow("no event_name")
    if name in AUTOMATIC:
        summary.skip("automatic")
        return None
    visitor = row.get("user_pseudo_id")
    if not visitor or not isinstance(visitor, (str, int)):
        summary.skip("anonymous")
        return None
    params = _params(row.get("event_params"))
    url = params.get("page_location")
    if not isinstance(url, str) or not url:
        summary.skip("no_page")
        return None
    path = schemas.page_path(url)
    if name != "page_view":
        name = name[:MAX_NAME]
        schemas.check_name(name)
    referrer = params.get("page_referrer")
    attrs = fields.visit_fields(
        site_host,
        _tagged(url, _record(row, "collected_traffic_source")),
        referrer if isinstance(referrer, str) and referrer else None,
        _device(_record(row, "device")),
        _location(_record(row, "geo")),
    )
    identity = identity_source(None, str(visitor), None, None)
    if name == "page_view":
        return Hit(ts, path, PAGEVIEW, identity, attrs=attrs)
    return Hit(ts, path, name, identity, attrs=attrs, props=_props(params), revenue=_revenue(row, name, params))


def _time(value) -> datetime:
    try:
        micros = int(value)
    except (TypeError, ValueError):
        raise BadRow("no event_timestamp") from None
    try:
        return _EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        raise BadRow("event_timestamp out of range") from None


def _params(items) -> dict:
    """event_params as {key: its value}: the string, else the integer, else the number."""
    found: dict = {}
    if not isinstance(items, list):
        return found
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            continue
        value = item.get("value")
        if not isinstance(value, dict):
            continue
        if value.get("string_value") is not None:
            found[item["key"]] = value["string_value"]
        elif value.get("int_value") is not None:
            found[item["key"]] = _number(value["int_value"])
        else:
            found[item["key"]] = _number(value.get("double_value", value.get("float_value")))
    return found


def _number(value) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _record(row: dict, name: str) -> dict:
    value = row.get(name)
    return value if isinstance(value, dict) else {}


def _tagged(url: str, traffic: dict) -> str:
    """The page URL, with the event's collected UTM tags as its query when it has none."""
    if "utm_" in url.partition("?")[2]:
        return url
    tags = [(tag, value) for tag, column in UTM if (value := fields.known(traffic.get(column)))]
    if not tags:
        return url
    base = url.partition("#")[0]
    return f"{base}{'&' if '?' in base else '?'}{urlencode(tags)}"


def _device(device: dict):
    web = _record(device, "web_info")
    return fields.device(
        _text(web.get("browser")),
        _text(web.get("browser_version")),
        _text(device.get("operating_system")),
        _text(device.get("operating_system_version")),
        _text(device.get("category")),
    )


def _location(geo: dict):
    return fields.location(
        country_code(fields.known(geo.get("country"))), _text(geo.get("region")), _text(geo.get("city"))
    )


def _text(value) -> str | None:
    return value if isinstance(value, str) else None


def _props(params: dict) -> tuple[tuple[str, str], ...]:
    """The event's own string parameters as properties, as many as Tally takes: the first
    MAX_PROPS, names and values within their lengths, no control characters."""
    props = []
    for key, value in params.items():
        if key in BOOKKEEPING or not isinstance(value, str) or not value:
            continue
        if len(key) > schemas.MAX_PROP_KEY or len(value) > schemas.MAX_PROP_VALUE or not (key + value).isprintable():
            continue
        props.append((key, value))
        if len(props) == schemas.MAX_PROPS:
            break
    return tuple(props)


def _revenue(row: dict, name: str, params: dict) -> tuple[str, int] | None:
    """A purchase's revenue: ecommerce.purchase_revenue in the event's `currency`, else
    purchase_revenue_in_usd (or event_value_in_usd) in USD. Other events' `value` (a
    cart's, a lead's worth) is not revenue."""
    ecommerce = _record(row, "ecommerce")
    currency = params.get("currency")
    amount = _number(ecommerce.get("purchase_revenue"))
    if amount is not None and isinstance(currency, str) and currency:
        candidate = {"currency": currency, "amount": str(amount)}
    else:
        usd = _number(ecommerce.get("purchase_revenue_in_usd"))
        if usd is None and name == "purchase":
            usd = _number(row.get("event_value_in_usd"))
        if usd is None:
            return None
        candidate = {"currency": "USD", "amount": str(usd)}
    try:
        return schemas.check_revenue(candidate)
    except schemas.BadEvent:
        return None


READER = Reader(
    read,
    unit="event",
    reasons=(
        ("automatic", "GA4 automatic events (session_start, first_visit, user_engagement, scroll)"),
        ("anonymous", "without user_pseudo_id (consent mode)"),
        ("no_page", "without page_location"),
    ),
    check=check,
)
