"""Deleting a site deletes its Redis data: every key under `tally:{<site id>}:`.

Its counters, bitmaps, visitor ids and filters have no expiry until a rollup gives them one,
and a deleted site is never rolled up again, so they would stay forever. The purge runs
once the delete is committed (a delete rolled back keeps its data), by whatever deleted the
row: `Site.delete()`, the admin's delete page and its bulk action, `purgesite
--delete-site`. It is SCAN + UNLINK in batches (analytics.keybrowser.purge), in a Celery
task: SCAN walks the whole keyspace of the site's server, seconds for a big one, which a
delete request should not wait for. With the broker out, the request purges itself. If
Redis fails, the delete stands and a warning names `manage.py purgesite --site-id N`.

Other processes keep a site's settings for up to CACHE_SECONDS (analytics.sites) and may
count its events meanwhile, so the task runs once more LATE_PURGE_SECONDS later.
"""

import logging

from django.db import transaction
from django.db.models.signals import post_delete
from kombu.exceptions import OperationalError

from . import keybrowser, tasks
from .models import Site
from .sites import CACHE_SECONDS
from .store.connection import get_redis

log = logging.getLogger(__name__)

LATE_PURGE_SECONDS = 3 * CACHE_SECONDS


def purge_now_and_later(site_id: int, domain: str):
    try:
        tasks.purge_deleted_site.delay(site_id, domain)
    except OperationalError as e:
        log.warning("the broker is out (%s): deleted site %s (id %s) purged in the request, once", e, domain, site_id)
        keybrowser.purge_deleted(get_redis(), site_id, domain)
        return
    try:
        tasks.purge_deleted_site.apply_async((site_id, domain), countdown=LATE_PURGE_SECONDS)
    except OperationalError as e:  # (the broker went out in between: the first pass is queued)
        log.warning("no second purge of deleted site %s (id %s) scheduled: %s", domain, site_id, e)


def _deleted(sender, instance, using, **kwargs):
    site_id, domain = instance.pk, instance.domain  # (read now: the row's instance loses its pk after this)
    transaction.on_commit(lambda: purge_now_and_later(site_id, domain), using=using)


def connect_signals():
    """post_delete, not Site.delete(): a queryset's delete (the admin's bulk action) sends
    it for each row too."""
    post_delete.connect(_deleted, sender=Site, dispatch_uid="tally-site-deletion-purge")
