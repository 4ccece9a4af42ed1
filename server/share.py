"""Share links' per-client rate: a public link must not let one client starve other sites'
reads (four parallel loads of one share page for a minute made another site's read API
answer in 36.7 s). Every share-link request of a client (hashed IP) charges one GCRA
bucket (analytics/store/limits.py), across every link; past it, a 429 page with
Retry-After. The dashboard caches share-link answers a minute per URL as well, and each
link may compute only so many pages a minute across all clients (share_render_refused):
clients at many addresses varying the URL (a cache miss each) cannot starve others either
(measured: 4 clients on rotating addresses made another site's read API p50 1.2 s)."""

import hashlib

from django.conf import settings
from django.shortcuts import render

from analytics.api.http import client_ip
from analytics.store import keys
from analytics.store.connection import get_redis
from analytics.store.limits import Bucket, Limited, Rate, throttle


def share_throttled(request):
    """A 429 page for a client past its share-page rate, else None. (While Redis is out,
    the page answers 503 anyway: server/middleware.py.)"""
    if not settings.SHARE_PAGES_PER_MINUTE:
        return None
    digest = hashlib.blake2b(
        client_ip(request).encode(), key=settings.SECRET_KEY.encode()[:64], digest_size=12
    ).hexdigest()
    return _charged(
        request,
        Bucket(keys.rate_share(digest), Rate(settings.SHARE_PAGES_PER_MINUTE, settings.SHARE_PAGES_BURST)),
        "too many share-page requests",
    )


def share_render_refused(request, site_id: int):
    """A 429 page when this share link has computed its minute's worth of pages (answers
    from the cache cost nothing and are not charged), else None."""
    if not settings.SHARE_RENDERS_PER_MINUTE:
        return None
    return _charged(
        request,
        Bucket(keys.rate_share_renders(site_id), Rate(settings.SHARE_RENDERS_PER_MINUTE, settings.SHARE_RENDERS_BURST)),
        "this share link is being read too often",
    )


def _charged(request, bucket: Bucket, message: str):
    try:
        throttle(get_redis(), [bucket], message)
    except Limited as e:
        response = render(request, "429.html", {"retry_after": e.retry_after}, status=429)
        response["Retry-After"] = str(e.retry_after)
        return response
    return None
