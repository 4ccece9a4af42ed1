"""What every peer reads: a batch of the stream's events parsed, checked and enriched with
Tally's own ingest functions, so ClickHouse and the truth count exactly the fields Tally
counts.

Each event goes the way `POST /api/v1/events` takes it: pydantic's batch schema
(schemas.batch_adapter), the edge checks (a crawler's User-Agent, referrer spam, a data
centre's address: dropped and counted), then schemas.batch_hit (the page path, the
identity source, the visit fields of sources.py, devices.py and geo.py, the props). The
visit fields come back as a Visit; the visitor as a 64-bit number, a keyed hash of the
identity and the site (Plausible's user_id is a salted SipHash of the same inputs; the
hash only has to be the same for every peer).
"""

import hashlib
from datetime import UTC, datetime
from functools import lru_cache
from typing import NamedTuple

from analytics.dimensions import FIELD_SEP, GROUP_SEP, SEP
from analytics.ingest.bots import is_bot, referrer_spam
from analytics.ingest.datacenters import is_datacenter
from analytics.ingest.schemas import batch_adapter, batch_hit

SALT = b"tally-peers"


class Visit(NamedTuple):
    """An event's visit fields as Tally names them ("" where Tally has none). A session
    keeps its first event's."""

    hostname: str
    source: str
    referrer: str
    channel: str
    utm_source: str
    utm_medium: str
    utm_campaign: str
    utm_term: str
    utm_content: str
    browser: str
    browser_version: str
    os: str
    os_version: str
    device: str
    country: str
    region: str
    city: str
    screen: str


class Event(NamedTuple):
    ts: int  # seconds since the epoch, UTC (the batch API's timestamps are whole seconds here)
    user_id: int  # unsigned 64-bit
    name: str  # "pageview" or a custom event's name
    path: str
    props: tuple[tuple[str, str], ...]
    interactive: bool
    visit: Visit


def enrich(batch: list[dict], site_host: str, now: datetime | None = None) -> tuple[list[Event], int]:
    """The batch's events that Tally would count, enriched, and how many it would drop."""
    now = now or datetime.now(UTC)
    kept, dropped = [], 0
    for item in batch_adapter.validate_python(batch):
        ip, agent = item.get("ip"), item.get("user_agent")
        if (agent is not None and is_bot(agent)) or referrer_spam(item.get("referrer")) or is_datacenter(ip):
            dropped += 1
            continue
        hit = batch_hit(item, now, site_host)
        assert hit.ts is not None, "the stream dates every event"
        kept.append(
            Event(
                int(hit.ts.timestamp()),
                user_id(hit.identity, site_host),
                hit.name,
                hit.path,
                hit.props,
                hit.interactive,
                visit_of(hit.attrs),
            )
        )
    return kept, dropped


def user_id(identity: bytes, site_host: str) -> int:
    digest = hashlib.blake2b(identity + b"\n" + site_host.encode(), key=SALT, digest_size=8).digest()
    return int.from_bytes(digest, "big")


@lru_cache(maxsize=50_000)
def visit_of(attrs: str) -> Visit:
    """Tally's visit fields ("name<SEP>value", joined by FIELD_SEP and GROUP_SEP) as a Visit."""
    fields = dict(f.partition(SEP)[::2] for f in attrs.replace(GROUP_SEP, FIELD_SEP).split(FIELD_SEP) if f)
    return Visit(*(fields.get(name, "") for name in Visit._fields))
