"""The admin as a site owner uses it: adding a site, its key and snippet shown once, the
change page's buttons (new key, share link), the time zone list, the favicon."""

import re

import pytest
from django.test import Client

from analytics.models import ApiKey, Site, hash_api_key

pytestmark = pytest.mark.one_leg  # (pages, documents and settings over the runner, which every leg tests on its server)

ADD_URL = "/admin/analytics/site/add/"
KEY = re.compile(r"tly_[A-Za-z0-9_-]{43}")
NASTY = "<img src=x onerror=alert(1)>.example"  # a domain the validator would refuse, saved straight to the database


def site_form(**changes):
    return {
        "domain": "new.example",
        "timezone": "Europe/Berlin",
        "identity_mode": "stable",
        "keep_realtime_minutes": "10",
        "keep_page_days": "35",
        "keep_page_period_days": "400",
        "keep_daily_days": "400",
        "keep_segment_days": "90",
        "bloom_capacity": "1000",
        "bloom_error_rate": "0.01",
        "bloom_expansion": "2",
        "bloom_idle_days": "180",
        "bloom_max_memory_mb": "256",
        "ingest_rate_per_minute": "0",
        "max_pages_per_day": "10000",
        "max_event_names_per_day": "1000",
        "max_property_values": "1000",
        "max_property_names": "100",
        "max_property_groups": "20000",
        "segment_values": "10",
        "drop_crawlers": "on",
        "drop_datacenters": "on",
        "drop_referrer_spam": "on",
        "pattern_pageviews": "300",
        "api_keys-TOTAL_FORMS": "0",
        "api_keys-INITIAL_FORMS": "0",
        "funnels-TOTAL_FORMS": "0",
        "funnels-INITIAL_FORMS": "0",
        "goals-TOTAL_FORMS": "0",
        "goals-INITIAL_FORMS": "0",
        "annotations-TOTAL_FORMS": "0",
        "annotations-INITIAL_FORMS": "0",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        **changes,
    }


def change_url(site):
    return f"/admin/analytics/site/{site.pk}/change/"


def shown_key(response):
    (key,) = set(KEY.findall(response.content.decode()))
    return key


@pytest.fixture
def staff_client(client, django_user_model):
    """Staff, but with no permission on sites."""
    client.force_login(django_user_model.objects.create_user("staff", password="pw-12345678", is_staff=True))
    return client


def test_it_shows_a_new_sites_key_once_with_the_snippet(admin_client):
    response = admin_client.post(ADD_URL, site_form())
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    site = Site.objects.get(domain="new.example")
    key = shown_key(response)
    assert ApiKey.objects.get(key_hash=hash_api_key(key)).site == site
    page = response.content.decode()
    assert (
        "&lt;script defer data-domain=&quot;new.example&quot; src=&quot;http://testserver/static/tracker.js&quot;"
        in page
    )
    assert "curl -X POST http://testserver/api/event" in page
    assert 'href="/dashboard/new.example/"' in page and f'href="{change_url(site)}"' in page

    # ... and nowhere after: not on the site's pages, not in a message, not in a cookie
    assert key not in admin_client.get(change_url(site)).content.decode()
    assert key not in admin_client.get("/admin/analytics/site/").content.decode()
    assert all(key not in morsel.value for morsel in admin_client.cookies.values())


def test_the_key_of_a_new_site_works_over_http(admin_client, client):
    key = shown_key(admin_client.post(ADD_URL, site_form()))
    response = client.post(
        "/api/v1/events",
        data='[{"url": "https://new.example/", "visitor": "a"}]',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.json()["accepted"] == 1


def test_it_makes_a_new_key_with_the_button(admin_client, site):
    response = admin_client.post(f"/admin/analytics/site/{site.pk}/api-key/")
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    key = shown_key(response)
    assert ApiKey.objects.get(key_hash=hash_api_key(key)).site == site
    assert "Back to the site" in response.content.decode()
    assert key not in admin_client.get(change_url(site)).content.decode()


def test_it_makes_keys_on_post_only(admin_client, site):
    assert admin_client.get(f"/admin/analytics/site/{site.pk}/api-key/").status_code == 405
    assert site.api_keys.count() == 1  # (the fixture's)


def test_it_sends_non_staff_to_the_login(client, django_user_model, site):
    client.force_login(django_user_model.objects.create_user("plain", password="pw-12345678"))
    for action in ("api-key", "share"):
        response = client.post(f"/admin/analytics/site/{site.pk}/{action}/")
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    site.refresh_from_db()
    assert site.api_keys.count() == 1 and site.share_token is None


def test_it_refuses_staff_who_may_not_change_the_site(staff_client, site):
    for action in ("api-key", "share", "unshare"):
        assert staff_client.post(f"/admin/analytics/site/{site.pk}/{action}/").status_code == 403
    site.refresh_from_db()
    assert site.api_keys.count() == 1 and site.share_token is None


def test_a_refused_request_is_logged_in_one_line_without_a_traceback(staff_client, site):
    import io
    import logging

    from config.log_filters import DeniedWithoutTraceback

    handler = next(h for h in logging.root.handlers if any(isinstance(f, DeniedWithoutTraceback) for f in h.filters))
    buffer = io.StringIO()
    stream = handler.setStream(buffer)
    try:
        assert staff_client.post(f"/admin/analytics/site/{site.pk}/api-key/").status_code == 403
    finally:
        handler.setStream(stream)
    assert "Forbidden" in buffer.getvalue() and "Traceback" not in buffer.getvalue()


def test_it_checks_csrf(admin_user, site):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assert client.post(f"/admin/analytics/site/{site.pk}/api-key/").status_code == 403
    assert site.api_keys.count() == 1


def test_it_shows_the_buttons_on_the_change_page(admin_client, site):
    page = admin_client.get(change_url(site)).content.decode()
    assert f'action="/admin/analytics/site/{site.pk}/api-key/"' in page
    assert "Create share link" in page and "Revoke share link" not in page
    tools = page.split('class="object-tools"')[1].split("</ul>")[0]
    assert tools.count("csrfmiddlewaretoken") == 2

    site.enable_sharing()
    page = admin_client.get(change_url(site)).content.decode()
    assert "Replace share link" in page and "Revoke share link" in page


def test_it_creates_replaces_and_revokes_the_share_link(admin_client, site):
    response = admin_client.post(f"/admin/analytics/site/{site.pk}/share/", follow=True)
    site.refresh_from_db()
    first = site.share_token
    assert response.redirect_chain == [(change_url(site), 302)]
    assert f"Share link for example.com: http://testserver/share/{first}/" in response.content.decode()

    admin_client.post(f"/admin/analytics/site/{site.pk}/share/")
    site.refresh_from_db()
    assert site.share_token not in (None, first)

    response = admin_client.post(f"/admin/analytics/site/{site.pk}/unshare/", follow=True)
    site.refresh_from_db()
    assert site.share_token is None
    assert "Revoked the share link of example.com." in response.content.decode()


def test_it_keeps_the_bulk_actions(admin_client, site):
    def act(action):
        return admin_client.post(
            "/admin/analytics/site/", {"action": action, "_selected_action": [site.pk]}, follow=True
        )

    response = act("create_api_key")
    assert "no-store" in response["Cache-Control"]
    assert ApiKey.objects.get(key_hash=hash_api_key(shown_key(response))).site == site
    assert "Share link for example.com" in act("enable_sharing").content.decode()
    act("revoke_sharing")
    site.refresh_from_db()
    assert site.share_token is None


def test_it_offers_every_time_zone_in_a_datalist(admin_client):
    page = admin_client.get(ADD_URL).content.decode()
    assert 'list="id_timezone_zones"' in page and '<datalist id="id_timezone_zones">' in page
    assert '<option value="Europe/Berlin">' in page


def test_it_refuses_an_unknown_time_zone(admin_client):
    response = admin_client.post(ADD_URL, site_form(timezone="Mars/Olympus"))
    assert response.status_code == 200
    assert "unknown time zone: Mars/Olympus" in response.context["adminform"].form.errors["timezone"][0]
    assert not Site.objects.exists()


def test_it_collapses_the_advanced_settings_only(admin_client, site):
    page = admin_client.get(change_url(site)).content.decode()
    for name in ("Advanced: Recommendation dedup (Bloom filters)", "Advanced: Key expiry policy"):
        assert re.search(rf"<details><summary>\s*<h2[^>]*>{re.escape(name)}</h2>", page)
    assert re.search(r"<h2[^>]*>Limits</h2>", page) and not re.search(r"<summary>\s*<h2[^>]*>Limits", page)


def test_it_links_the_favicon_and_redirects_favicon_ico(admin_client, client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302 and re.search(r"^/static/favicon\.\w+\.svg$", response["Location"])
    assert client.get(response["Location"]).status_code == 200
    for url in ("/admin/login/", "/admin/", ADD_URL):
        page = (client if url == "/admin/login/" else admin_client).get(url).content.decode()
        assert f'<link rel="icon" href="{response["Location"]}" type="image/svg+xml">' in page


def test_it_escapes_the_domain(admin_client, db):
    site = Site.objects.create(domain=NASTY)
    pages = [
        admin_client.get(change_url(site)),
        admin_client.post(f"/admin/analytics/site/{site.pk}/api-key/"),
        admin_client.post(f"/admin/analytics/site/{site.pk}/share/", follow=True),
        admin_client.post(f"/admin/analytics/site/{site.pk}/unshare/", follow=True),
    ]
    for response in pages:
        page = response.content.decode()
        assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;.example" in page


def test_bloom_settings_past_the_size_limit_are_refused_with_the_largest_size(admin_client):
    response = admin_client.post(ADD_URL, site_form(bloom_capacity="100000000", bloom_error_rate="1e-9"))
    assert response.status_code == 200 and not Site.objects.exists()
    assert "the largest allowed is 16 MB" in response.content.decode()
