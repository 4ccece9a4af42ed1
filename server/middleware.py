"""Middleware of our own.

Content-Security-Policy: scripts only from our own origin (no inline script, no CDN).
Plotly sets inline styles on the elements it draws, so styles allow 'unsafe-inline'; the
live counter connects to the ASGI server's origin (LIVE_PORT or LIVE_URL).

Cache-Control: every answer that says nothing of its own (the dashboard, share pages, the
read API; static files and the login page set theirs) is `private, max-age=0`: a shared
cache (a CDN, a company proxy) must never keep one site's numbers or one user's page, and
a browser asks again rather than show yesterday's numbers.

Storage outages: a page whose Redis is down or frozen answers a 503 page with Retry-After
(the socket timeout bounds the wait), not a 500; the API's views answer their own JSON 503.

Proxy headers: X-Forwarded-Proto is believed only when the request comes from one of
TRUSTED_PROXIES; from anyone else it is dropped before Django reads it.
"""

from django.conf import settings
from django.shortcuts import render

from analytics.api.http import is_trusted_proxy
from analytics.store.connection import OUTAGE


def live_origin(request) -> str:
    """Where browsers reach the live stream: LIVE_URL, else this host on LIVE_PORT."""
    return (
        settings.LIVE_URL or f"{request.scheme}://{request.get_host().rsplit(':', 1)[0]}:{settings.LIVE_PORT}"
    ).rstrip("/")


class UntrustedProxyHeadersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not is_trusted_proxy(request.META.get("REMOTE_ADDR", "")):
            request.META.pop("HTTP_X_FORWARDED_PROTO", None)
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = content_security_policy(request)
        return response


def content_security_policy(request, frame_ancestors: str = "'none'") -> str:
    """Scripts from our own origin only; frames of our pages only by `frame_ancestors`
    (an embeddable share link lists its origins: dashboard/sharing.py)."""
    live = live_origin(request)
    return (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        f"img-src 'self' data:; connect-src 'self' {live}; font-src 'self'; "
        f"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors {frame_ancestors}"
    )


class PrivateCacheMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Cache-Control" not in response:
            response["Cache-Control"] = "private, max-age=0"
        return response


class StorageOutageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, OUTAGE):
            response = render(request, "503.html", status=503)
            response["Retry-After"] = "5"
            return response
        return None
