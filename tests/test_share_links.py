"""Share links' protections (issue 36): a password (hashed; a signed cookie once entered,
bound to the password), embedding in other sites' frames from listed origins only, a last
day; managed on the settings page by admins."""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.hashers import make_password

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import Segment, ShareLinkOptions
from analytics.sites import SiteInfo
from team.roles import add_member

pytestmark = pytest.mark.one_leg  # (pages, mail and webhooks: the numbers behind them are tested on every server)

PASSWORD = "pw-12345678-long"


@pytest.fixture
def shared(site, r):
    record(r, SiteInfo.from_model(site), [Hit(None, "/", "pageview", identity_source(None, "a", None, None))])
    return site, site.enable_sharing()


def test_a_password_link_asks_once_then_remembers(client, shared):
    site, token = shared
    ShareLinkOptions.objects.create(token=token, site=site, password=make_password("open sesame"))
    page = client.get(f"/share/{token}/?period=7d")
    assert page.status_code == 401 and "protected by a password" in page.content.decode()
    assert "example.com</h1>" in page.content.decode() and "Unique visitors" not in page.content.decode()
    assert client.get(f"/share/{token}/breakdown?property=source").status_code == 401
    wrong = client.post(f"/share/{token}/unlock", {"password": "guess"})
    assert wrong.status_code == 403 and "not the password" in wrong.content.decode()
    right = client.post(f"/share/{token}/unlock", {"password": "open sesame"})
    assert right.status_code == 302 and right["Location"] == f"/share/{token}/"
    cookie = next(iter(right.cookies.values()))
    assert cookie["httponly"] and "open sesame" not in cookie.value
    assert client.get(f"/share/{token}/?period=7d").status_code == 200
    assert client.get(f"/share/{token}/breakdown?property=source").status_code == 200
    # a new password locks the old cookie out
    ShareLinkOptions.objects.filter(token=token).update(password=make_password("another one"))
    assert client.get(f"/share/{token}/?period=7d").status_code == 401
    assert ShareLinkOptions.objects.get(token=token).password.startswith(("pbkdf2_", "argon2", "scrypt"))


def test_an_embeddable_link_may_be_framed_by_its_origins_only(client, shared):
    site, token = shared
    plain = client.get(f"/share/{token}/?period=7d")
    assert plain["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in plain["Content-Security-Policy"]
    ShareLinkOptions.objects.create(token=token, site=site, embed=True, origins="https://blog.example.org")
    framed = client.get(f"/share/{token}/?period=30d")
    assert "X-Frame-Options" not in framed
    assert "frame-ancestors https://blog.example.org" in framed["Content-Security-Policy"]
    assert "script-src 'self'" in framed["Content-Security-Policy"]  # (the rest of the policy stays)


def test_changed_embedding_takes_effect_at_once_past_the_share_cache(client, shared):
    site, token = shared
    assert "frame-ancestors 'none'" in client.get(f"/share/{token}/?period=7d")["Content-Security-Policy"]
    options = ShareLinkOptions.objects.create(token=token, site=site, embed=True, origins="https://blog.example.org")
    assert (
        "frame-ancestors https://blog.example.org"
        in client.get(f"/share/{token}/?period=7d")["Content-Security-Policy"]
    )
    options.embed = False
    options.save()
    again = client.get(f"/share/{token}/?period=7d")
    assert "frame-ancestors 'none'" in again["Content-Security-Policy"] and again["X-Frame-Options"] == "DENY"


def test_an_embedded_links_password_form_may_show_in_its_frame(client, shared):
    site, token = shared
    ShareLinkOptions.objects.create(
        token=token, site=site, embed=True, origins="https://blog.example.org", password=make_password("open sesame")
    )
    page = client.get(f"/share/{token}/")
    assert page.status_code == 401 and "frame-ancestors https://blog.example.org" in page["Content-Security-Policy"]


def test_a_link_past_its_last_day_opens_nothing(client, shared):
    site, token = shared
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    ShareLinkOptions.objects.create(token=token, site=site, expires=yesterday + timedelta(days=1))
    assert client.get(f"/share/{token}/?period=7d").status_code == 200  # (its last day: still)
    ShareLinkOptions.objects.filter(token=token).update(expires=yesterday)
    assert client.get(f"/share/{token}/?period=1d").status_code == 404
    assert client.get(f"/share/{token}/realtime").status_code == 404


def test_the_settings_page_sets_each_links_protections(client, shared, django_user_model):
    site, token = shared
    segment = Segment.objects.create(site=site, name="Google", filters="source==Google")
    segment_token = segment.share()
    admin = django_user_model.objects.create_user("admin", "a@example.org", PASSWORD)
    add_member(site, admin, "admin")
    client.force_login(admin)
    page = "/dashboard/example.com/settings/sharing"
    html = client.get(page).content.decode()
    assert token in html and segment_token in html and "Segment Google" in html
    client.post(page, {"action": "options", "token": token, "embed": "on", "origins": "javascript:alert(1)"})
    assert not ShareLinkOptions.objects.exists()
    client.post(page, {"action": "options", "token": "someone-elses", "password": "long enough"})
    assert not ShareLinkOptions.objects.exists()
    client.post(
        page,
        {"action": "options", "token": segment_token, "password": "long enough", "embed": "on",
         "origins": "https://a.example.org/\nhttps://b.example.org:8443", "expires": "2099-01-01"},
    )  # fmt: skip
    options = ShareLinkOptions.objects.get(token=segment_token)
    assert options.origin_list == ["https://a.example.org", "https://b.example.org:8443"]
    assert options.password and options.password != "long enough" and str(options.expires) == "2099-01-01"
    client.logout()
    assert client.get(f"/share/{segment_token}/").status_code == 401
    client.force_login(admin)
    client.post(page, {"action": "revoke", "token": segment_token})
    assert not ShareLinkOptions.objects.filter(token=segment_token).exists()
    client.logout()
    assert client.get(f"/share/{segment_token}/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_password_links_live_stream_needs_its_cookie(r):
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from django.test import AsyncClient

    from analytics.models import Site

    site = Site.objects.create(domain="example.com", timezone="UTC")
    token = site.enable_sharing()
    ShareLinkOptions.objects.create(token=token, site=site, password=make_password("open sesame"))

    async def status():
        return (await AsyncClient().get(f"/live/share/{token}")).status_code

    with ThreadPoolExecutor(1) as thread:
        assert thread.submit(asyncio.run, status()).result() == 404
