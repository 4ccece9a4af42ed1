"""Visitor identity: who is "the same visitor", without ever storing who they are.

An event's identity is, in order of preference, the site's own `user_id`, an explicit
`visitor` id, or the client's IP address and User-Agent. Whatever it is goes through a
keyed hash (BLAKE2b in keyed mode, a MAC like HMAC but faster) with the site's secret
salt, and only the 16-byte digest reaches Redis. In daily-salt mode the key is derived
from the salt and the day, so the same person is a new digest every day: strict privacy,
unique visitors per day only.
"""

import hashlib
from datetime import date, datetime, timedelta
from functools import lru_cache

from ..dimensions import VISIT_TIMEOUT

DIGEST_SIZE = 16


@lru_cache(maxsize=4096)
def day_key(salt: bytes, day: date) -> bytes:
    return hashlib.blake2b(day.isoformat().encode(), key=salt, digest_size=32).digest()


def identity_source(user_id: str | None, visitor: str | None, ip: str | None, user_agent: str | None) -> bytes:
    """The bytes that are hashed; the prefix keeps a user_id from colliding with a visitor id."""
    if user_id:
        return b"u\n" + user_id.encode()
    if visitor:
        return b"v\n" + visitor.encode()
    return b"a\n" + (ip or "").encode() + b"\n" + (user_agent or "").encode()


def digest(key: bytes, source: bytes) -> bytes:
    return hashlib.blake2b(source, key=key, digest_size=DIGEST_SIZE).digest()


def previous_digest(site, source: bytes, local: datetime) -> bytes | None:
    """A daily-salt visitor's digest under yesterday's salt, for an event (at `local`, the
    site's time) early enough after midnight that their visit may go on across the salt
    change (its state is under that digest); None otherwise."""
    if site.daily_salt and local.hour == 0 and local.minute < VISIT_TIMEOUT // 60:
        return digest(day_key(site.salt, local.date() - timedelta(days=1)), source)
    return None
