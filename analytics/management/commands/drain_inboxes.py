"""python manage.py drain_inboxes [--once]

Counts the single events waiting in the sites' inboxes (analytics/capture/inbox.py), every
DRAIN_DELAY seconds, until stopped (SIGTERM or Ctrl-C: it finishes the batch in hand).
`make run` starts it and tells its web workers to leave the draining to it
(TALLY_INBOX_DRAINER=process), so their event loops never wait on a drain for the GIL:
measured at 8 connections, 2,574 single events a second against 2,219 with the drainer
as a thread in each web worker. With --once it makes one pass and says how many it counted.

Each pass looks only at the sites the pushes named (keys.inbox_waiting: one command when
nothing waits, where looking at every inbox cost two commands a site every pass, 200,000
commands a second for 10,000 idle sites). Every SWEEP_EVERY seconds it looks at every
inbox (a hint lost to a crash between a push and its hint, a claim a dead drainer left)
and reads the site list again; a site it does not know yet is read when first named.
"""

import os
import signal
import time

from django.core.management.base import BaseCommand

from analytics.capture import inbox
from analytics.models import Site
from analytics.sites import SiteInfo
from analytics.store.connection import OUTAGE, get_redis

NICE = int(os.environ.get("TALLY_DRAINER_NICE", "10"))  # (the web workers first: see the docstring)
SWEEP_EVERY = 5  # seconds between looks at every inbox, with the site list read again


class Command(BaseCommand):
    help = "Count the single events waiting in the sites' inboxes (what `make run` runs beside the web server)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="one pass, then exit")

    def handle(self, once=False, **options):
        if once:
            counted = inbox.drain_waiting(get_redis(), Sites().read_all())
            self.stdout.write(f"{counted} events counted")
            return
        os.nice(NICE)
        stopping = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stopping.append(True))
        known, swept_at = Sites(), 0.0
        while not stopping:
            try:
                if time.monotonic() - swept_at > SWEEP_EVERY:
                    swept_at = time.monotonic()
                    inbox.drain_waiting(get_redis(), known.read_all())
                inbox.drain_hinted(get_redis(), known.of)
            except OUTAGE as e:  # (the events wait in Redis; the spool holds what could not get there)
                self.stderr.write(f"Redis is out ({e}); trying again in a second")
                time.sleep(1)
            time.sleep(inbox.DRAIN_DELAY)


class Sites:
    """The sites by id, as last read: all at each sweep, an unknown one when first named."""

    def __init__(self) -> None:
        self.by_id: dict[int, SiteInfo] = {}

    def read_all(self) -> list[SiteInfo]:
        self.by_id = {site.pk: SiteInfo.from_model(site) for site in Site.objects.all()}
        return list(self.by_id.values())

    def of(self, ids: list[int]) -> list[SiteInfo]:
        unknown = [i for i in ids if i not in self.by_id]
        if unknown:
            self.by_id.update((site.pk, SiteInfo.from_model(site)) for site in Site.objects.filter(pk__in=unknown))
        return [self.by_id[i] for i in ids if i in self.by_id]
