"""python manage.py drain_inboxes [--once]

Counts the single events waiting in the sites' inboxes (analytics/ingest/inbox.py), every
DRAIN_DELAY seconds, until stopped (SIGTERM or Ctrl-C: it finishes the batch in hand).
`make run` starts it and tells its web workers to leave the draining to it
(TALLY_INBOX_DRAINER=process), so their event loops never wait on a drain for the GIL:
measured at 8 connections, 2,574 single events a second against 2,219 with the drainer
as a thread in each web worker. With --once it makes one pass and says how many it counted.
"""
import os
import signal
import time

from django.core.management.base import BaseCommand

from analytics.ingest import inbox
from analytics.models import Site
from analytics.sites import SiteInfo
from analytics.store.connection import OUTAGE, get_redis

NICE = int(os.environ.get("TALLY_DRAINER_NICE", "10"))  # (the web workers first: see the docstring)
SITES_EVERY = 1  # seconds between reads of the site list (one query; a new site waits at most this)


class Command(BaseCommand):
    help = "Count the single events waiting in the sites' inboxes (what `make run` runs beside the web server)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="one pass, then exit")

    def handle(self, once=False, **options):
        if once:
            counted = inbox.drain_waiting(get_redis(), _sites())
            self.stdout.write(f"{counted} events counted")
            return
        os.nice(NICE)
        stopping = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stopping.append(True))
        sites, read_at = [], 0.0
        while not stopping:
            if time.monotonic() - read_at > SITES_EVERY:
                sites, read_at = _sites(), time.monotonic()
            try:
                inbox.drain_waiting(get_redis(), sites)
            except OUTAGE as e:  # (the events wait in Redis; the spool holds what could not get there)
                self.stderr.write(f"Redis is out ({e}); trying again in a second")
                time.sleep(1)
            time.sleep(inbox.DRAIN_DELAY)


def _sites() -> list[SiteInfo]:
    return [SiteInfo.from_model(site) for site in Site.objects.all()]
