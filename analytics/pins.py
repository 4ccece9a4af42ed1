"""Pinned values: the fields that get a visitor bitmap every day, past the day's first
`segment_values` values of their dimension (lib/segments.lua), so that goals and funnels
stay exact on a busy day: each goal's custom event and literal page, each funnel step's.
(A page pattern such as /blog/* names no field; its matching pages are exact while they
are among the day's first pages.)

The set lives in Redis beside the bitmaps (keys.pinned_fields), rewritten whenever a goal
or a funnel changes, and by the nightly rollup (a restored or flushed Redis gets it back).
"""
import logging

import redis

from . import dimensions
from .models import Funnel, Goal
from .store import keys
from .store.connection import OUTAGE, get_redis

log = logging.getLogger(__name__)


def pinned(site_id: int) -> set[str]:
    """The fields a site pins: its goals' and funnels' events and literal pages."""
    fields = set()
    for goal in Goal.objects.filter(site_id=site_id):
        if goal.event_name:
            fields.add(dimensions.field("event", goal.event_name))
        elif "*" not in goal.page_pattern:
            fields.add(dimensions.field("page", goal.page_pattern))
    for funnel in Funnel.objects.filter(site_id=site_id):
        for kind, value in funnel.step_list():
            if kind == "event" or "*" not in value:
                fields.add(dimensions.field(kind, value))
    return fields


def sync(r: redis.Redis, site_id: int):
    """Rewrite the site's pinned set (one MULTI: ingest never sees it empty half way)."""
    fields = pinned(site_id)
    pipe = r.pipeline(transaction=True)
    pipe.unlink(keys.pinned_fields(site_id))
    if fields:
        pipe.sadd(keys.pinned_fields(site_id), *fields)
    pipe.execute()


def _changed(sender, instance, **kwargs):
    try:
        sync(get_redis(), instance.site_id)
    except OUTAGE:  # (the admin's save stands; the nightly rollup syncs again)
        log.warning("pinned values of site %s not synced: Redis unreachable", instance.site_id)


def connect_signals():
    from django.db.models.signals import post_delete, post_save

    for model in (Goal, Funnel):
        post_save.connect(_changed, sender=model, dispatch_uid=f"tally-pins-{model.__name__}-save")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"tally-pins-{model.__name__}-del")
