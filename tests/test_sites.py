"""Sites and API keys: addsite, hashed keys shown once, the admin."""

import io

import pytest
from django.core.management import CommandError, call_command

from analytics.models import ApiKey, Site, hash_api_key


def test_addsite_prints_the_key_alone_on_the_last_line(db):
    out = io.StringIO()
    call_command("addsite", "Shop.Example.com", "--timezone", "Europe/Berlin", stdout=out)
    key = out.getvalue().strip().splitlines()[-1]
    assert key.startswith("tly_") and " " not in key
    site = Site.objects.get(domain="shop.example.com")
    assert site.timezone == "Europe/Berlin"
    stored = ApiKey.objects.get(site=site)
    assert stored.key_hash == hash_api_key(key) and key not in (stored.key_hash, stored.prefix)


def test_addsite_refuses_bad_input(db):
    with pytest.raises(CommandError, match="unknown time zone"):
        call_command("addsite", "example.com", "--timezone", "Mars/Olympus", stdout=io.StringIO())
    with pytest.raises(CommandError, match="domain"):
        call_command("addsite", "https://example.com/x", stdout=io.StringIO())
    call_command("addsite", "example.com", stdout=io.StringIO())
    with pytest.raises(CommandError, match="already exists"):
        call_command("addsite", "example.com", stdout=io.StringIO())


def test_the_key_from_addsite_works_over_http(client, db):
    out = io.StringIO()
    call_command("addsite", "example.com", stdout=out)
    key = out.getvalue().strip().splitlines()[-1]
    response = client.post(
        "/api/v1/events",
        data='[{"url": "https://example.com/", "visitor": "a"}]',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.json()["accepted"] == 1


def test_the_admin_is_staff_only(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("plain", password="pw-12345678"))
    response = client.get("/admin/analytics/site/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_dashboard_needs_login(client):
    response = client.get("/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_admin_shows_the_expiry_policy_and_todays_memory(admin_client, site, r):
    from analytics.ingest import Hit, record
    from analytics.ingest.identity import identity_source
    from analytics.sites import SiteInfo

    record(
        r,
        SiteInfo.from_model(site),
        [Hit(None, f"/p{n}", "pageview", identity_source(None, str(n), None, None)) for n in range(50)],
    )
    page = admin_client.get(f"/admin/analytics/site/{site.pk}/change/").content.decode()
    assert "Key expiry policy" in page and 'name="keep_page_days"' in page
    assert "daily pages" in page and "realtime minutes" in page
    assert "<td>101</td>" in page  # 50 page HLLs + 50 page counters + the page index
    assert "for the first 1,000 items (11.0 bits and 8 hash functions per item)" in page


@pytest.mark.django_db(transaction=True)
def test_the_realtime_retention_moves_to_minutes_and_a_chosen_one_is_kept():
    """Migration 0016: a site at the old default (2 hours) gets the new one (10 minutes),
    a retention an operator chose is kept in minutes."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("analytics", "0015_segment_retention")], [("analytics", "0016_realtime_minutes")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("analytics", "Site")
    old.objects.create(domain="default.example", keep_realtime_hours=2)
    old.objects.create(domain="chosen.example", keep_realtime_hours=3)
    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps.get_model("analytics", "Site")
    assert {s.domain: s.keep_realtime_minutes for s in new.objects.all()} == {
        "default.example": 10,
        "chosen.example": 180,
    }
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_a_key_records_when_it_was_last_used_but_not_on_every_request(client, make_site):
    """The admin shows `last_used`: written when a key authenticates, then not again for
    LAST_USED_EVERY (ingest is a hot path: no database write per request)."""
    from datetime import timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from analytics import sites

    site, key = make_site()
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    stats = {"site": site.domain, "period": "day"}
    before = timezone.now()
    assert client.get("/api/v1/stats/aggregate", stats, **bearer).status_code == 200
    stored = ApiKey.objects.get(site=site)
    assert stored.last_used is not None and before <= stored.last_used <= timezone.now()

    with CaptureQueriesContext(connection) as queries:
        for _ in range(5):
            assert client.get("/api/v1/stats/aggregate", stats, **bearer).status_code == 200
    assert not [q for q in queries.captured_queries if "apikey" in q["sql"].lower()]  # no read, no write
    assert ApiKey.objects.get(site=site).last_used == stored.last_used

    long_ago = timezone.now() - sites.LAST_USED_EVERY - timedelta(seconds=1)
    ApiKey.objects.filter(pk=stored.pk).update(last_used=long_ago)
    sites.clear_cache()  # (what another process, or CACHE_SECONDS later, sees)
    events = '[{"url": "https://example.com/", "visitor": "a"}]'
    assert client.post("/api/v1/events", data=events, content_type="application/json", **bearer).json()["accepted"] == 1
    assert ApiKey.objects.get(site=site).last_used > long_ago + sites.LAST_USED_EVERY

    assert client.get("/api/v1/stats/aggregate", stats, HTTP_AUTHORIZATION="Bearer tly_nope").status_code == 401
