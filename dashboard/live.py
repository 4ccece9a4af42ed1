"""Server-sent events for the live visitor counter.

Served by the ASGI server that `make run` starts beside gunicorn (config/asgi.py, port
LIVE_PORT): there an open connection is a coroutine. On the sync WSGI server it would hold
a worker for as long as the tab is open and starve ingestion, so it refuses to run there.
"""
import json

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import Http404, HttpResponse, StreamingHttpResponse

from analytics.queries import access
from analytics.queries.live import visitor_counts
from analytics.sites import SiteInfo


def _cors(request, response):
    """The dashboard page lives on the web port, this stream on LIVE_PORT: allow the page's
    origin (a host we serve) with credentials, so the session cookie comes along."""
    origin = request.headers.get("Origin", "")
    host = origin.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    if origin and (host in settings.ALLOWED_HOSTS or "*" in settings.ALLOWED_HOSTS):
        response["Access-Control-Allow-Origin"] = origin
        response["Access-Control-Allow-Credentials"] = "true"
        response["Vary"] = "Origin"
    return response


async def _stream(request, site):
    if not isinstance(request, ASGIRequest):
        return HttpResponse("live updates are served by the ASGI server (LIVE_PORT)", status=404, content_type="text/plain")
    info = SiteInfo.from_model(site)

    async def events():
        yield "retry: 3000\n\n"
        async for visitors in visitor_counts(info):
            yield f"data: {json.dumps({'visitors': visitors})}\n\n"

    response = StreamingHttpResponse(events(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return _cors(request, response)


async def live(request, domain):
    user = await request.auser()
    site = await sync_to_async(access.site_for_user)(user, domain)
    if site is None:
        raise Http404("no such site")
    return await _stream(request, site)


async def live_shared(request, token):
    site = await sync_to_async(access.site_for_share_token)(token)
    if site is None:
        raise Http404("no such site")
    return await _stream(request, site)
