"""Pinned values: the fields that get a visitor bitmap every day, past the day's first
`segment_values` values of their dimension (lib/segments.lua):

* each goal's custom event and literal page, each funnel step's, so that goals and
  funnels stay exact on a busy day (a page pattern such as /blog/* names no field; its
  matching pages are exact while they are among the day's first pages);
* the top `segment_values` values of each dimension (and pages) on the last rolled-up
  day, so that today's top values keep their bitmaps even when junk values arrive first
  (one anonymous request per value could otherwise take a day's first places).

The set lives in Redis beside the bitmaps (keys.pinned_fields), rewritten whenever a goal
or a funnel changes, and after each nightly rollup (which also brings it back to a
restored or flushed Redis).
"""

import logging
import secrets

import redis
from django.db.models import Max

from . import dimensions
from .models import DailyMetrics, DimensionDaily, Funnel, Goal, PageDaily, Site
from .store import keys
from .store.connection import OUTAGE, get_redis

log = logging.getLogger(__name__)


def pinned(site_id: int) -> set[str]:
    """The fields a site pins: its goals' and funnels' events and literal pages, and the
    last rolled-up day's top values."""
    fields = _recent_top(site_id)
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


def _recent_top(site_id: int) -> set[str]:
    """The top values of each visit dimension and the top pages, by visitors, on the
    latest final day that had visitors (as many as the site's segment_values)."""
    site = Site.objects.filter(pk=site_id).first()
    latest = DailyMetrics.objects.filter(site_id=site_id, final=True, visitors__gt=0).aggregate(day=Max("date"))["day"]
    if site is None or latest is None or not site.segment_values:
        return set()
    fields: set[str]
    top, fields = site.segment_values, set()
    for dimension in dimensions.VISIT_DIMENSIONS:
        values = (
            DimensionDaily.objects.filter(site_id=site_id, date=latest, dimension=dimension)
            .exclude(value=dimensions.OTHER)
            .order_by("-visitors", "value")
            .values_list("value", flat=True)[:top]
        )
        fields.update(dimensions.field(dimension, v) for v in values)
    pages = (
        PageDaily.objects.filter(site_id=site_id, date=latest)
        .exclude(path=dimensions.OTHER)
        .order_by("-visitors", "path")
    )
    fields.update(dimensions.field("page", p) for p in pages.values_list("path", flat=True)[:top])
    return fields


def sync(r: redis.Redis, site_id: int):
    """Rewrite the site's pinned set: the new set is made aside and RENAMEd over the old,
    so ingest never sees it half made (one slot: a MULTI would do, but Tally's cluster
    pipelines are not transactions)."""
    fields = pinned(site_id)
    if not fields:
        r.unlink(keys.pinned_fields(site_id))
        return
    aside = keys.temporary(site_id, secrets.token_hex(6), "pinned")
    pipe = r.pipeline(transaction=False)
    pipe.sadd(aside, *fields)
    pipe.rename(aside, keys.pinned_fields(site_id))
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
