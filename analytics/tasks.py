"""Celery tasks: thin wrappers that take plain ids and call the plain functions in
analytics.rollups, analytics.capture.spool and analytics.reports (which tests call directly).
The schedule is in config/celery.py."""

from celery import shared_task

from . import keybrowser, rollups
from .capture import inbox, spool
from .models import Site
from .reports import exports
from .rollups import expiry
from .sites import SiteInfo
from .store.connection import get_redis

JOBS = {"recent": rollups.roll_recent, "closed": rollups.roll_closed}
SITE_TASK_EXPIRES = {"recent": 5 * 60 * 1.5, "closed": 60 * 60 * 1.5}


def _for_every_site(job: str):
    for site_id in Site.objects.values_list("pk", flat=True):
        rollup_site.apply_async((site_id, job), expires=SITE_TASK_EXPIRES[job])


@shared_task(ignore_result=True)
def rollup_recent():
    _for_every_site("recent")


@shared_task(ignore_result=True)
def rollup_closed():
    _for_every_site("closed")


@shared_task(ignore_result=True)
def rollup_site(site_id: int, job: str):
    site = Site.objects.filter(pk=site_id).first()
    if site is not None:
        r = get_redis()
        inbox.flush(r, SiteInfo.from_model(site))  # (single events a stopped web process left waiting)
        JOBS[job](r, site)


@shared_task(ignore_result=True)
def apply_expiry():
    r = get_redis()
    for site in Site.objects.all():
        expiry.apply_all(r, site, SiteInfo.from_model(site).today())


@shared_task(bind=True, ignore_result=True, max_retries=None)
def build_export(self, job: str, site_id: int):
    """Build a large export when the export semaphore has a slot; wait in line otherwise
    (retrying every two seconds keeps our place and tells the user where we are)."""
    site = Site.objects.filter(pk=site_id).first()
    r = get_redis()
    if site is None or exports.status(r, job) is None:
        return  # the site is gone, or the job expired
    if not exports.try_build(r, job, SiteInfo.from_model(site)):
        raise self.retry(countdown=2)


@shared_task(ignore_result=True)
def replay_spool():
    """Count the events ingest kept on local disk while Redis was down."""
    spool.replay(get_redis())


@shared_task(ignore_result=True)
def purge_deleted_site(site_id: int, domain: str = ""):
    """A deleted site's keys, right after the delete and once more later
    (analytics.site_deletion says why); never a site whose row is there."""
    if not Site.objects.filter(pk=site_id).exists():
        keybrowser.purge_deleted(get_redis(), site_id, domain)
