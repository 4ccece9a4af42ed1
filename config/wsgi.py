"""WSGI entry point: gunicorn serves `config.wsgi:application` with sync workers.

Ingestion requests skip the middleware a browser session needs (sessions, CSRF, auth,
messages, clickjacking headers): those views take no session and no form, and on this
path every request is a tracker's pageview, so the ~0.1 ms per request the full stack
costs is measured in `make bench`. Everything else goes through the full stack.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from django.conf import settings  # noqa: E402  (configured by the line above)
from django.core.handlers.wsgi import WSGIHandler  # noqa: E402

INGEST_PATHS = frozenset({"/api/event", "/api/v1/events", "/api/v1/seen", "/api/v1/unseen"})


def _handler_with_middleware(middleware: list[str]) -> WSGIHandler:
    """A Django handler with its own middleware list (Django reads the setting once, when
    the handler is built)."""
    saved = settings.MIDDLEWARE
    settings.MIDDLEWARE = middleware
    try:
        return WSGIHandler()
    finally:
        settings.MIDDLEWARE = saved


ingest_application = _handler_with_middleware(settings.INGEST_MIDDLEWARE)


def application(environ, start_response):
    if environ.get("PATH_INFO") in INGEST_PATHS:
        return ingest_application(environ, start_response)
    return django_application(environ, start_response)
