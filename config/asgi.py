"""ASGI entry point, for the live dashboard stream only (dashboard/live.py).

uvicorn serves it on LIVE_PORT beside gunicorn: long-lived server-sent-event connections
cost a coroutine here instead of a sync worker there. Ingestion stays on WSGI, which
serves it several times faster.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()
