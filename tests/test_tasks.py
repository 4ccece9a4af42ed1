"""Celery: the schedule names real tasks, tasks run as functions, and a real worker runs them."""

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings

from analytics import tasks
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import DailyMetrics
from analytics.sites import SiteInfo
from config.celery import app
from tests.celery_worker import start_worker

BASE = Path(__file__).resolve().parent.parent


def test_every_scheduled_task_is_registered():
    app.loader.import_default_modules()
    for name, entry in app.conf.beat_schedule.items():
        assert entry["task"] in app.tasks, name
        assert entry["options"]["expires"] == pytest.approx(1.5 * entry["schedule"])


def ingest_two_days(r, site):
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    hits = [Hit(now - timedelta(days=1), "/", "pageview", identity_source(None, f"v{n}", None, None)) for n in range(5)]
    hits += [Hit(None, "/", "pageview", identity_source(None, f"v{n}", None, None)) for n in range(3, 9)]
    record(r, info, hits)


def test_tasks_called_as_functions(site, r):
    ingest_two_days(r, site)
    tasks.rollup_site(site.pk, "recent")
    today = SiteInfo.from_model(site).today()
    assert DailyMetrics.objects.get(site=site, date=today).dau == 6
    tasks.rollup_site(site.pk + 1000, "recent")  # a deleted site: nothing, no error
    tasks.apply_expiry()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_the_rollup(make_site, r, redis_server, eager_celery):
    eager_celery.conf.task_always_eager = False
    site, _ = make_site()
    ingest_two_days(r, site)
    env = dict(
        os.environ,
        REDIS_URL=redis_server.url,
        REDIS_CLUSTER_URL=settings.REDIS_CLUSTER_URL,  # (the data's cluster, when the suite runs on one)
        CELERY_BROKER_URL=redis_server.url,
        DATABASE_URL=f"sqlite:///{settings.DATABASES['default']['NAME']}",
    )
    worker = start_worker(env)
    try:
        app.conf.broker_url = redis_server.url
        tasks.rollup_recent.delay()  # fans out one rollup_site task per site
        deadline = time.monotonic() + 60
        while not DailyMetrics.objects.filter(site=site).count() == 2:
            assert worker.poll() is None, worker.stdout.read()
            assert time.monotonic() < deadline, "the worker did not roll up in time"
            time.sleep(0.2)
        today = SiteInfo.from_model(site).today()
        assert DailyMetrics.objects.get(site=site, date=today).dau == 6
        assert DailyMetrics.objects.get(site=site, date=today - timedelta(days=1)).dau == 5
    finally:
        worker.terminate()
        worker.wait(20)
