"""Visitors right now: distinct visitors over the last five UTC minutes."""

from datetime import datetime, timedelta

import redis

from ..sites import SiteInfo
from ..store import keys

REALTIME_MINUTES = 5


def realtime_keys(site: SiteInfo, now: datetime) -> list[str]:
    """The minute HLLs of the last five UTC minutes, this one included."""
    minute = now.replace(second=0, microsecond=0)
    return [keys.realtime(site.id, minute - timedelta(minutes=n)) for n in range(REALTIME_MINUTES)]


def realtime_visitors(r: redis.Redis, site: SiteInfo, now: datetime) -> int:
    """Distinct visitors over the last five minutes: one PFCOUNT over their minute HLLs."""
    return r.pfcount(*realtime_keys(site, now))
