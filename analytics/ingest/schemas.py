"""The shapes of incoming events, one schema per endpoint, and their checks.

Pydantic validates types and sizes (in its compiled core: a 1,000-event batch validates in
about a millisecond); the checks pydantic cannot express (an http(s) URL with a host, a
timestamp in a sane range) follow in plain Python. Every failure becomes a short message
naming the field, which the API returns as a 4xx JSON error or, in a batch, per event.
"""

import ipaddress
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any, NotRequired
from urllib.parse import quote

import orjson
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictBool, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from .identity import identity_source
from .record import PAGEVIEW, Hit
from .visit import visit_attrs

MAX_PATH = 1024
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
CLOCK_SKEW = timedelta(hours=1)

Url = Annotated[str, Field(min_length=1, max_length=2048)]
Name = Annotated[str, Field(min_length=1, max_length=120)]
Text = Annotated[str, Field(max_length=2048)]
Id = Annotated[str, Field(min_length=1, max_length=256)]
Width = Annotated[int, Field(ge=0, le=100_000, strict=True)]  # (strict: true is not a width)


class PlausibleEvent(BaseModel):
    """`POST /api/event`: Plausible's Events API body, long or short (tracker) field names."""

    model_config = ConfigDict(extra="ignore")

    name: Name = Field(validation_alias=AliasChoices("name", "n"))
    url: Url = Field(validation_alias=AliasChoices("url", "u"))
    domain: Annotated[str, Field(min_length=1, max_length=1000)] = Field(validation_alias=AliasChoices("domain", "d"))
    referrer: Text | None = Field(default=None, validation_alias=AliasChoices("referrer", "r"))
    props: Any = Field(default=None, validation_alias=AliasChoices("props", "p", "m"))
    revenue: Any = Field(default=None, validation_alias=AliasChoices("revenue", "$"))
    interactive: StrictBool = Field(default=True, validation_alias=AliasChoices("interactive", "i"))
    hash_mode: Any = Field(default=None, validation_alias=AliasChoices("hashMode", "h"))
    user_id: Id | None = None
    screen_width: Width | None = Field(default=None, validation_alias=AliasChoices("screen_width", "w"))


class BatchEvent(TypedDict):
    """One event of `POST /api/v1/events`."""

    url: Url
    ts: NotRequired[datetime | None]
    visitor: NotRequired[Id | None]
    user_id: NotRequired[Id | None]
    ip: NotRequired[Annotated[str, Field(max_length=64)] | None]
    user_agent: NotRequired[Text | None]
    referrer: NotRequired[Text | None]
    name: NotRequired[Name]
    props: NotRequired[Any]
    revenue: NotRequired[Any]
    screen_width: NotRequired[Width | None]
    interactive: NotRequired[bool]


batch_adapter = TypeAdapter(list[BatchEvent])
batch_event_adapter = TypeAdapter(BatchEvent)


class BadEvent(ValueError):
    """An event that cannot be counted; the message says why and is shown to the sender."""


def describe(error: ValidationError, skip_index: bool = False) -> str:
    """A one-line reason from pydantic's errors: 'url: Field required; ts: ...'."""
    parts = []
    for item in error.errors(include_url=False):
        loc = item["loc"][1:] if skip_index else item["loc"]
        where = ".".join(str(p) for p in loc)
        parts.append(f"{where}: {item['msg']}" if where else item["msg"])
    return "; ".join(parts)


# scheme, a host with no space or delimiter in it, then the path (group 1); query and
# fragment are dropped. A regex, not urlsplit: this runs per event (0.8 µs against ~8 µs).
_URL = re.compile(
    r"https?://(?:\[[0-9a-f:.]+\](?::\d*)?|[^/?#\s\[\]]+)(/[^?#]*)?(?=[?#]|\Z)", re.IGNORECASE | re.DOTALL
)


def page_path(url: str, keep_fragment: bool = False) -> str:
    """The page a URL names: its path, without query string (and without fragment unless
    the site uses hash-based routing), percent-decoded (decoded_path)."""
    match = _URL.match(url)
    if match is None:
        raise BadEvent("url: must be an absolute http(s) URL, e.g. https://example.com/page")
    path = decoded_path(match.group(1) or "/")
    if keep_fragment and "#" in url:
        path = f"{path}#{url.split('#', 1)[1]}"
    return path[:MAX_PATH]


_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_KEPT_ESCAPED = frozenset("/?#%") | frozenset(map(chr, range(0x20))) | {"\x7f"}


def decoded_path(path: str) -> str:
    """A path as people read it: browsers send `/%C3%BCber` for `/über` (and a server
    log, a batch or a goal typed by hand may say either), so each run of percent escapes
    that is UTF-8 text is decoded, and one page is one row whichever way it came. What
    would change the path's meaning or is no text stays escaped (upper-case hex): `%2F`,
    `%3F`, `%23`, `%25`, control characters, and bytes that are not UTF-8."""
    if "%" not in path:
        return path
    return _ESCAPES.sub(_decoded_run, path)


def _decoded_run(match: re.Match) -> str:
    run = match.group(0)
    try:
        text = bytes.fromhex(run.replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        return run.upper()
    return "".join(quote(c, safe="") if c in _KEPT_ESCAPED else c for c in text)


def latest_ts(now: datetime) -> datetime:
    """The latest timestamp ingest takes: a sender's clock may run a little ahead
    (CLOCK_SKEW), but a day to come would keep raw keys with no expiry until then (a day's
    keys get their TTL from its rollup). The batch API and `import_log` hold to it."""
    return now + CLOCK_SKEW


def check_ts(ts: datetime | None, now: datetime) -> datetime | None:
    """Timestamps without an offset are UTC; ones before 2000 or in the future are refused."""
    if ts is None:
        return None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    else:
        try:
            ts = ts.astimezone(UTC)
        except OverflowError:  # e.g. 9999-12-31T23:59:59-14:00 is past the calendar's end in UTC
            raise BadEvent("ts: out of range") from None
    if ts < EARLIEST:
        raise BadEvent("ts: before 2000-01-01")
    if ts > latest_ts(now):
        raise BadEvent("ts: in the future")
    return ts


MAX_PROPS = 30
MAX_PROP_KEY = 300
MAX_PROP_VALUE = 2000
_CURRENCY = re.compile(r"[A-Z]{3}")


def check_name(name: str):
    """Event names are shown and used as keys: no control characters (they could not be
    told apart from Tally's own separators)."""
    if not name.isprintable():
        raise BadEvent("name: no control characters")


def check_props(props) -> tuple[tuple[str, str], ...]:
    """Custom properties, Plausible's rules: an object (or its JSON text, as older trackers
    send it) of at most 30 keys to strings, numbers or booleans; empty values are dropped.
    Keys and values with control characters are refused (they could not be told apart
    from Tally's own separators)."""
    if props is None or props == {}:
        return ()
    if isinstance(props, str):
        try:
            props = orjson.loads(props)
        except orjson.JSONDecodeError:
            raise BadEvent("props: must be a JSON object") from None
    if not isinstance(props, dict):
        raise BadEvent("props: must be an object of property names to values")
    if len(props) > MAX_PROPS:
        raise BadEvent(f"props: at most {MAX_PROPS} properties")
    checked = []
    for key, value in props.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (int, float)):
            value = str(value)
        elif value is None:
            continue
        elif not isinstance(value, str):
            raise BadEvent(f"props.{key[:40]}: must be a string, a number or a boolean")
        if not key or len(key) > MAX_PROP_KEY or len(value) > MAX_PROP_VALUE:
            raise BadEvent(f"props: names of 1 to {MAX_PROP_KEY} characters, values of at most {MAX_PROP_VALUE}")
        if not (key + value).isprintable():
            raise BadEvent(f"props.{key[:40]!r}: no control characters")
        if value:
            checked.append((key, value))
    return tuple(checked)


def check_revenue(revenue) -> tuple[str, int] | None:
    """`{"currency": "EUR", "amount": "12.50"}` (amount a number or a decimal string) as
    (currency, amount in hundredths)."""
    if revenue is None:
        return None
    if not isinstance(revenue, dict) or not isinstance(revenue.get("currency"), str) or "amount" not in revenue:
        raise BadEvent('revenue: must be {"currency": "EUR", "amount": 12.5}')
    currency = revenue["currency"].upper()
    if not _CURRENCY.fullmatch(currency):
        raise BadEvent("revenue.currency: an ISO 4217 code such as EUR or USD")
    amount = revenue["amount"]
    try:
        value = Decimal(str(amount)) if not isinstance(amount, bool) else None
        hundredths = round(value * 100) if value is not None and value.is_finite() and abs(value) < 10**13 else None
    except (ArithmeticError, ValueError):  # (InvalidOperation, Overflow: "lots", "1e4000000")
        hundredths = None
    if hundredths is None or not -(10**15) < hundredths < 10**15:
        raise BadEvent('revenue.amount: a number, e.g. 12.5 or "12.50"')
    return currency, int(hundredths)


def check_ip(ip: str):
    """A sender's `ip` is an identity and a country: text that is no address would count a
    made-up visitor from nowhere."""
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        raise BadEvent(f"ip: {ip[:64]!r} is not an IPv4 or IPv6 address") from None


def batch_hit(event: BatchEvent, now: datetime, site_host: str) -> Hit:
    """A validated batch event as a Hit, or BadEvent. (Whether it is counted is the
    caller's question: api/ingest.py Checks.)"""
    user_id, visitor, ip = event.get("user_id"), event.get("visitor"), event.get("ip")
    if not (user_id or visitor or ip):
        raise BadEvent("no identity: give visitor, user_id or ip (with user_agent)")
    if ip:
        check_ip(ip)
    user_agent = event.get("user_agent")
    url = event["url"]
    name = event.get("name") or PAGEVIEW
    check_name(name)
    return Hit(
        ts=check_ts(event.get("ts"), now),
        path=page_path(url),
        name=name,
        identity=identity_source(user_id, visitor, ip, user_agent),
        user=user_id or None,
        attrs=visit_attrs(site_host, url, event.get("referrer"), user_agent, ip, event.get("screen_width")),
        interactive=event.get("interactive", True),
        props=check_props(event.get("props")),
        revenue=check_revenue(event.get("revenue")),
    )
