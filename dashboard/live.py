"""Server-sent events for the live visitor counter.

Served by the ASGI server that `make run` starts beside gunicorn (config/asgi.py, port
LIVE_PORT): there an open connection is a coroutine. On the sync WSGI server it would hold
a worker for as long as the tab is open and starve ingestion, so it refuses to run there.
"""

import json
import time

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import Http404, HttpResponse, StreamingHttpResponse

from analytics.queries import access
from analytics.queries.live import visitor_counts
from analytics.sites import SiteInfo

from . import sharing


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


RECHECK_SECONDS = 10.0  # how often an open stream asks again whether it may still be read


async def _stream(request, site, still_allowed, counts: bool = True):
    """The stream of counts; it ends when `still_allowed()` turns false (a revoked share
    link, an owner removed), asked at most every RECHECK_SECONDS, on the next count.
    Without `counts`, each tick says only that there was one (`"visitors": null`: a
    segment's link, whose page then asks for its own audience's count)."""
    if not isinstance(request, ASGIRequest):
        return HttpResponse(
            "live updates are served by the ASGI server (LIVE_PORT)", status=404, content_type="text/plain"
        )
    info = SiteInfo.from_model(site)

    async def events():
        yield "retry: 3000\n\n"
        checked = time.monotonic()
        async for visitors in visitor_counts(info):
            if time.monotonic() - checked >= RECHECK_SECONDS:
                if not await sync_to_async(still_allowed)():
                    yield "event: closed\ndata: {}\n\n"
                    return
                checked = time.monotonic()
            yield f"data: {json.dumps({'visitors': visitors if counts else None})}\n\n"

    response = StreamingHttpResponse(events(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return _cors(request, response)


async def live(request, domain):
    user = await request.auser()
    site = await sync_to_async(access.site_for_user)(user, domain)
    if site is None:
        raise Http404("no such site")
    return await _stream(request, site, lambda: access.site_for_user(user, domain) is not None)


async def live_shared(request, token):
    options = await sync_to_async(access.share_options)(token)
    if not sharing.unlocked(request, token, options):
        raise Http404("no such site")  # (a protected link's stream: only with its cookie)
    site = await sync_to_async(access.site_for_share_token)(token)
    if site is None:
        segment = await sync_to_async(access.segment_for_share_token)(token)
        if segment is None:
            raise Http404("no such site")
        return await _stream(
            request,
            segment.site,  # (selected with it)
            lambda: access.segment_for_share_token(token) is not None,
            counts=False,
        )
    return await _stream(request, site, lambda: access.site_for_share_token(token) is not None)
