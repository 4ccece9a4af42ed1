"""Share links' per-client rate: a public link must not let one client starve other sites'
reads (four parallel loads of one share page for a minute made another site's read API
answer in 36.7 s). Every share-link request of a client (hashed IP) charges one GCRA
bucket (analytics/store/limits.py), across every link; past it, a 429 page with
Retry-After. The dashboard caches share-link answers a minute per URL as well."""
import hashlib

from django.conf import settings
from django.shortcuts import render

from analytics.api.http import client_ip
from analytics.store import keys
from analytics.store.connection import get_redis
from analytics.store.limits import Bucket, Limited, Rate, throttle


def share_throttled(request):
    """A 429 page for a client past its share-page rate, else None. (While Redis is out,
    the page answers 503 anyway: config/middleware.py.)"""
    if not settings.SHARE_PAGES_PER_MINUTE:
        return None
    digest = hashlib.blake2b(client_ip(request).encode(), key=settings.SECRET_KEY.encode()[:64], digest_size=12).hexdigest()
    bucket = Bucket(keys.rate_share(digest), Rate(settings.SHARE_PAGES_PER_MINUTE, settings.SHARE_PAGES_BURST))
    try:
        throttle(get_redis(), [bucket], "too many share-page requests")
    except Limited as e:
        response = render(request, "429.html", {"retry_after": e.retry_after}, status=429)
        response["Retry-After"] = str(e.retry_after)
        return response
    return None
