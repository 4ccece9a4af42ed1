"""Celery tasks: thin wrappers that take plain ids and call the plain functions in
analytics.rollups, analytics.capture.spool, analytics.reports and analytics.imports.run
(which tests call directly). The schedule is in config/celery.py."""

import logging
import shutil
from pathlib import Path

from celery import shared_task
from django.utils import timezone

from . import keybrowser, rollups
from .capture import inbox, spool
from .imports import run
from .models import ImportJob, Site
from .queries import warm
from .reports import exports
from .rollups import expiry
from .sites import SiteInfo
from .store.connection import get_redis

log = logging.getLogger(__name__)
STOPPED = (
    "The import stopped on an unexpected error, which the server's log details; uploading the same "
    "files again resumes it (nothing counts twice)"
)

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
        info = SiteInfo.from_model(site)
        inbox.flush(r, info)  # (single events a stopped web process left waiting)
        if JOBS[job](r, site) is not None:  # (the first after the site's midnight: the new day's heads)
            warm.nightly(r, info)


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


@shared_task(ignore_result=True)
def run_import(job_id: int):
    """An import started from the admin's Imports page (analytics.admin). Only a queued job
    is taken, so a message delivered twice runs it once; its uploads go afterwards, however
    it ended."""
    taken = ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.QUEUED)
    if not taken.update(status=ImportJob.Status.RUNNING, started=timezone.now()):
        if not ImportJob.objects.filter(pk=job_id).exists():
            discard_uploads(ImportJob(pk=job_id))  # (its site was deleted while it waited)
        return
    job = ImportJob.objects.select_related("site").get(pk=job_id)
    try:
        import_job(job)
    finally:
        discard_uploads(job)


def import_job(job: ImportJob):
    """Run the job's import through the one import function; a refusal is the person's
    to read (their file names in it, not our paths), any other fault is the log's."""
    paths = [Path(p) for p in job.paths]
    try:
        run.import_files(job.site, job.kind, paths, say=job.say, names=job.names)
    except run.Refused as e:
        finish(job, ImportJob.Status.FAILED, with_names(str(e), paths, job.names))
    except Exception as e:
        log.exception("import job %s (%s, site %s) failed", job.pk, job.kind, job.site_id)
        finish(job, ImportJob.Status.FAILED, f"{STOPPED} ({type(e).__name__}).")
    else:
        finish(job, ImportJob.Status.DONE)


def with_names(message: str, paths: list[Path], names: list[str]) -> str:
    """A message about stored uploads, naming them as their sender did (the longest path
    first: .../1 is the start of .../10)."""
    for path, name in sorted(zip(paths, names), key=lambda pair: -len(str(pair[0]))):
        message = message.replace(str(path), name)
    return message


def finish(job: ImportJob, status: str, error: str = ""):
    """The job's outcome, written by id: a job whose site was deleted meanwhile is simply gone."""
    job.status, job.error, job.finished = status, error, timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(status=status, error=error, finished=job.finished)


def discard_uploads(job: ImportJob):
    """The job's folder of uploads: they are copies, and can be gigabytes."""
    shutil.rmtree(job.folder(), ignore_errors=True)
