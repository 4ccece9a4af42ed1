"""Live visitor counts for dashboards, pushed when ingest publishes a tick.

Ingest publishes on the site's channel at most once a second (record_batch.lua); each
listener answers a tick with one realtime count (PFCOUNT over five minute-HLLs), and also
recounts every HEARTBEAT seconds so the number falls as visitors leave. This runs in the
ASGI server (config/asgi.py), where an open connection costs a coroutine, not a worker.
"""
import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import redis.asyncio as aioredis
from django.conf import settings

from . import keys
from .queries import REALTIME_MINUTES
from .sites import SiteInfo

HEARTBEAT = 15.0


async def _count(r, site: SiteInfo) -> int:
    minute = datetime.now(UTC).replace(second=0, microsecond=0)
    return await r.pfcount(*(keys.realtime(site.id, minute - timedelta(minutes=n)) for n in range(REALTIME_MINUTES)))


async def visitor_counts(site: SiteInfo) -> AsyncIterator[int]:
    """The current count, then a new one after every tick (or heartbeat), forever."""
    r = aioredis.from_url(settings.REDIS_URL)
    pubsub = r.pubsub()
    try:
        await pubsub.subscribe(keys.live_channel(site.id))
        yield await _count(r, site)
        while True:
            try:
                await pubsub.get_message(ignore_subscribe_messages=True, timeout=HEARTBEAT)
            except asyncio.TimeoutError:
                pass
            yield await _count(r, site)
    finally:
        await pubsub.aclose()
        await r.aclose()
