"""Deleting a site deletes its Redis keys too (everything under `tally:{<site id>}:`), by
Site.delete(), the admin's delete page and its bulk action, and never another site's; with
Redis out, the delete still happens and `purgesite --site-id` finishes the job later."""

import io
import json
import logging

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from analytics.models import Goal, Site
from analytics.store import connection, keys
from tests.redis_server import free_port


def site_keys(r, site_id):
    return set(r.scan_iter(match=f"tally:{{{site_id}}}:*", count=1000))


def ingest(client, key, n=30):
    """Real events, so every family of keys a site has is there (ids, bitmaps, HLLs, visits...)."""
    events = [
        {
            "url": f"https://example.com/p{i % 7}?utm_source=news",
            "visitor": f"v{i}",
            "user_id": f"u{i % 3}",
            "props": {"plan": "team"},
        }
        for i in range(n)
    ]
    response = client.post(
        "/api/v1/events", data=json.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.json()["accepted"] == n


@pytest.fixture
def two_sites(client, make_site, r):
    (gone, gone_key), (kept, kept_key) = make_site("gone.example"), make_site("kept.example")
    Goal.objects.create(site=gone, event_name="Signup")  # (its delete, cascaded, rewrites the site's pinned values)
    ingest(client, gone_key)
    ingest(client, kept_key)
    assert len(site_keys(r, gone.pk)) > 20
    return gone, kept, site_keys(r, kept.pk)


def test_deleting_a_site_purges_its_keys_and_no_other_sites(two_sites, r, django_capture_on_commit_callbacks):
    gone, kept, theirs = two_sites
    gone_id = gone.pk  # (delete() sets it to None)
    r.set("celery-task-meta-x", 1)
    with django_capture_on_commit_callbacks(execute=True):
        gone.delete()
    assert site_keys(r, gone_id) == set()
    assert site_keys(r, kept.pk) == theirs and r.exists("celery-task-meta-x")


def test_no_key_goes_before_the_delete_is_committed(two_sites, r, django_capture_on_commit_callbacks):
    gone, _, _ = two_sites
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        Site.objects.filter(pk=gone.pk).delete()
        assert site_keys(r, gone.pk)  # (a delete rolled back keeps its data)
    assert len(callbacks) == 1


def test_the_admin_says_the_redis_data_goes_and_purges_it(
    admin_client, two_sites, r, django_capture_on_commit_callbacks
):
    gone, kept, theirs = two_sites
    page = admin_client.get(f"/admin/analytics/site/{gone.pk}/delete/").content.decode()
    assert "Redis data" in page and f"tally:{{{gone.pk}}}:" in page
    with django_capture_on_commit_callbacks(execute=True):
        assert admin_client.post(f"/admin/analytics/site/{gone.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Site.objects.filter(pk=gone.pk).exists()
    assert site_keys(r, gone.pk) == set() and site_keys(r, kept.pk) == theirs


def test_the_admins_bulk_delete_purges_each_site(
    admin_client, two_sites, make_site, r, django_capture_on_commit_callbacks
):
    gone, kept, theirs = two_sites
    other, _ = make_site("other.example")
    r.set(f"tally:{{{other.pk}}}:x", 1)
    form = {"action": "delete_selected", "_selected_action": [gone.pk, other.pk]}
    assert "Redis data" in admin_client.post("/admin/analytics/site/", form).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post("/admin/analytics/site/", {**form, "post": "yes"})
    assert site_keys(r, gone.pk) == set() and site_keys(r, other.pk) == set() and site_keys(r, kept.pk) == theirs


@pytest.mark.single_server  # (Redis made unreachable by pointing REDIS_URL elsewhere)
def test_with_redis_out_the_site_goes_and_purgesite_by_id_finishes_later(
    two_sites, r, caplog, django_capture_on_commit_callbacks
):
    gone, kept, theirs = two_sites
    gone_id, mine = gone.pk, site_keys(r, gone.pk)
    url = settings.REDIS_URL
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    connection.reset()
    try:
        with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
            gone.delete()
    finally:
        settings.REDIS_URL = url
        connection.reset()
    assert not Site.objects.filter(domain="gone.example").exists()
    assert f"manage.py purgesite --site-id {gone_id} --yes" in caplog.text
    assert site_keys(r, gone_id) == mine  # left for later

    out = io.StringIO()
    call_command("purgesite", "--site-id", str(gone_id), "--yes", stdout=out, stderr=io.StringIO())
    assert f"Deleted {len(mine):,} Redis keys of deleted site {gone_id}." in out.getvalue()
    assert site_keys(r, gone_id) == set() and site_keys(r, kept.pk) == theirs


def test_purgesite_needs_one_site_named(db):
    with pytest.raises(CommandError, match="DOMAIN or --site-id"):
        call_command("purgesite", "--yes", stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="DOMAIN or --site-id"):
        call_command("purgesite", "a.example", "--site-id", "3", "--yes", stdout=io.StringIO(), stderr=io.StringIO())


def test_the_late_pass_leaves_a_live_site_alone(two_sites, r):
    """The second pass (for events counted by processes that still had the site cached)
    runs only on a site whose row is gone."""
    from analytics import tasks

    _, kept, theirs = two_sites
    tasks.purge_deleted_site(kept.pk)
    assert site_keys(r, kept.pk) == theirs


def test_the_delete_request_queues_the_purge_and_a_worker_does_it(
    two_sites, r, redis_server, eager_celery, django_capture_on_commit_callbacks
):
    """SCAN walks the site's whole server: a big keyspace takes seconds, so the delete only
    queues the purge (now, and once more later) and answers."""
    import redis

    from analytics import tasks

    gone, kept, theirs = two_sites
    gone_id, mine = gone.pk, site_keys(r, gone.pk)
    broker = redis.Redis.from_url(redis_server.url)
    queued = broker.llen("celery")
    eager_celery.conf.task_always_eager = False
    with django_capture_on_commit_callbacks(execute=True):
        gone.delete()
    pinned = keys.pinned_fields(gone_id).encode()  # (the goal's delete, cascaded, empties it)
    assert site_keys(r, gone_id) == mine - {pinned}  # (nothing purged in the request)
    bodies = [json.loads(m) for m in broker.lrange("celery", 0, -1)[: broker.llen("celery") - queued]]
    assert sorted(b["headers"]["task"] for b in bodies) == ["analytics.tasks.purge_deleted_site"] * 2
    assert sum(1 for b in bodies if b["headers"].get("eta")) == 1  # (the second pass, later)
    broker.delete("celery")
    tasks.purge_deleted_site(gone_id, "gone.example")  # (what the worker runs)
    assert site_keys(r, gone_id) == set() and site_keys(r, kept.pk) == theirs


def test_with_the_broker_out_the_request_purges_itself(
    two_sites, r, eager_celery, caplog, django_capture_on_commit_callbacks
):
    gone, kept, theirs = two_sites
    gone_id = gone.pk

    def connect_to(url):  # (the app keeps its connections in pools made for one broker)
        eager_celery.conf.broker_url = url
        eager_celery._pool, eager_celery.amqp._producer_pool = None, None

    url = eager_celery.conf.broker_url
    eager_celery.conf.task_always_eager = False
    connect_to(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    try:
        with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
            gone.delete()
    finally:
        connect_to(url)
    assert "the broker is out" in caplog.text
    assert site_keys(r, gone_id) == set() and site_keys(r, kept.pk) == theirs
