"""Live visitor counts for dashboards, pushed when ingest publishes a tick.

Ingest publishes on the site's channel at most once a second (record_batch.lua). In each
server process one listener per site subscribes, answers a tick with one realtime count
(PFCOUNT over five minute-HLLs), also recounts every HEARTBEAT seconds so the number falls
as visitors leave, and hands the count to every open dashboard of that site: a thousand
open tabs cost one count a second, not a thousand. This runs in the ASGI server
(config/asgi.py), where an open connection is a coroutine, not a worker.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from ..sites import SiteInfo
from ..store import keys
from ..store.connection import new_async_client, new_async_subscriber
from .realtime import realtime_keys

HEARTBEAT = 15.0


async def _count(r, site: SiteInfo) -> int:
    return await r.pfcount(*realtime_keys(site, datetime.now(UTC)))


def _offer(queue: asyncio.Queue, count: int):
    """Keep only the newest count for a slow reader."""
    with contextlib.suppress(asyncio.QueueEmpty):
        if queue.full():
            queue.get_nowait()
    queue.put_nowait(count)


class _SiteChannel:
    def __init__(self, site: SiteInfo):
        self.site = site
        self.listeners: set[asyncio.Queue] = set()
        self.last: int | None = None
        self.task: asyncio.Task | None = None

    async def run(self):
        r, subscriber = new_async_client(), new_async_subscriber()
        pubsub = subscriber.pubsub()
        try:
            await pubsub.subscribe(keys.live_channel(self.site.id))
            while True:
                self.last = await _count(r, self.site)
                for queue in list(self.listeners):
                    _offer(queue, self.last)
                await pubsub.get_message(ignore_subscribe_messages=True, timeout=HEARTBEAT)
        finally:
            await pubsub.aclose()
            await subscriber.aclose()
            await r.aclose()


_channels: dict[int, _SiteChannel] = {}


async def visitor_counts(site: SiteInfo) -> AsyncIterator[int]:
    """The current count, then a new one after every tick (or heartbeat), until closed."""
    channel = _channels.get(site.id)
    if channel is None:
        channel = _channels[site.id] = _SiteChannel(site)
    queue: asyncio.Queue = asyncio.Queue(maxsize=1)
    channel.listeners.add(queue)
    if channel.task is None:
        channel.task = asyncio.create_task(channel.run())
    elif channel.last is not None:
        _offer(queue, channel.last)
    try:
        while True:
            yield await queue.get()
    finally:
        channel.listeners.discard(queue)
        if not channel.listeners and _channels.get(site.id) is channel:
            del _channels[site.id]
            channel.task.cancel()
