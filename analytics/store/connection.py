"""One Redis client per process, built lazily from settings on first use.

Nothing connects at import time (bitmapist's mistake): tests and the runner can point
settings.REDIS_URL somewhere else first, then call `reset()`.
"""
import threading

import redis
import redis.asyncio as aioredis
from django.conf import settings

_client = None
_lock = threading.Lock()


def get_redis() -> redis.Redis:
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = redis.Redis.from_url(
                    settings.REDIS_URL,
                    socket_connect_timeout=2,
                    socket_timeout=settings.REDIS_SOCKET_TIMEOUT,
                    health_check_interval=30,
                )
    return _client


def reset():
    """Forget the client (after settings.REDIS_URL changed, or after a fork)."""
    global _client
    with _lock:
        if _client is not None:
            _client.close()
        _client = None


def new_async_client() -> aioredis.Redis:
    """A fresh asyncio client (for a long-lived subscriber in the ASGI server); the caller
    closes it."""
    return aioredis.from_url(settings.REDIS_URL)
