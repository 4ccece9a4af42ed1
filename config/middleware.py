"""Content-Security-Policy: scripts only from our own origin (no inline script, no CDN).

Plotly sets inline styles on the elements it draws, so styles allow 'unsafe-inline'; the
live counter connects to the ASGI server's origin (LIVE_PORT or LIVE_URL).
"""
from django.conf import settings


def live_origin(request) -> str:
    """Where browsers reach the live stream: LIVE_URL, else this host on LIVE_PORT."""
    return (settings.LIVE_URL or f"{request.scheme}://{request.get_host().rsplit(':', 1)[0]}:{settings.LIVE_PORT}").rstrip("/")


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            live = live_origin(request)
            response["Content-Security-Policy"] = (
                "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                f"img-src 'self' data:; connect-src 'self' {live}; font-src 'self'; "
                "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
            )
        return response
