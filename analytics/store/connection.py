"""One Redis client per process, built lazily from settings on first use.

Nothing connects at import time (bitmapist's mistake): tests and the runner can point
settings.REDIS_URL somewhere else first, then call `reset()`.
"""

import threading
from typing import cast

import redis
import redis.asyncio as aioredis
from django.conf import settings

from .cluster import ClusterClient
from .loop_client import LoopClient

# What an outage looks like to a client: the server refused or timed out, (a cluster) a
# slot has no master or moved mid-call, or the server is full (its maxmemory, noeviction:
# it refuses a script before the script's first write, so nothing is half counted).
# Ingest spools on these; everything else is a bug.
OUTAGE = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.MovedError,
    redis.exceptions.TryAgainError,
    redis.exceptions.OutOfMemoryError,
)

_client: redis.Redis | None = None
_lock = threading.Lock()


def get_redis() -> redis.Redis:
    """The client of Tally's data: REDIS_CLUSTER_URL's cluster when it is set (store/cluster.py),
    else REDIS_URL's server."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                options = dict(socket_connect_timeout=2, socket_timeout=settings.REDIS_SOCKET_TIMEOUT)
                if settings.REDIS_CLUSTER_URL:
                    # (a stand-in for a single server's client: store/cluster.py)
                    _client = cast(redis.Redis, ClusterClient.from_url(settings.REDIS_CLUSTER_URL, **options))
                else:
                    _client = redis.Redis.from_url(settings.REDIS_URL, health_check_interval=30, **options)
    return _client


def reset():
    """Forget the client (after settings.REDIS_URL changed, or after a fork)."""
    global _client
    with _lock:
        if _client is not None:
            _client.close()
        _client = None


def new_async_client() -> aioredis.Redis:
    """A fresh asyncio client of Tally's data (for the ASGI server's live counts); the
    caller closes it. On a cluster, redis-py's asyncio cluster client (single commands only)."""
    if settings.REDIS_CLUSTER_URL:
        return cast(aioredis.Redis, aioredis.RedisCluster.from_url(settings.REDIS_CLUSTER_URL))
    return aioredis.from_url(settings.REDIS_URL)


def new_loop_client() -> LoopClient | None:
    """A lean client of Tally's data for the current event loop (the event front's pushes,
    store/loop_client.py says why), or None where it cannot serve (a cluster, TLS): then
    the caller sends with get_redis() from a thread."""
    if settings.REDIS_CLUSTER_URL:
        return None
    return LoopClient.for_url(settings.REDIS_URL, settings.REDIS_SOCKET_TIMEOUT)


def new_async_subscriber() -> aioredis.Redis:
    """A fresh asyncio client to subscribe with; the caller closes it. On a cluster it talks
    to the seed node: a PUBLISH (what ingest sends) reaches every node of a cluster."""
    return aioredis.from_url(settings.REDIS_CLUSTER_URL or settings.REDIS_URL)
