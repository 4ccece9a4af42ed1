"""The write path: an event from the edge to Redis.

    schemas.py   the shapes of incoming events and their checks
    bots.py      is this User-Agent a crawler?
    identity.py  who is "the same visitor", as a keyed hash
    sources.py   where a visit came from: referrer, source, channel, UTM tags
    record.py    validated hits into Redis, one round trip per call
    logs.py      access-log lines (Apache/Nginx combined) as hits

Ingestion writes raw counters only; it never imports the read side (analytics.queries),
nor the capture edge that calls it (analytics.capture: group commit, inbox, spool).
"""

from .record import PAGEVIEW, Hit, Recorded, record

__all__ = ["PAGEVIEW", "Hit", "Recorded", "record"]
