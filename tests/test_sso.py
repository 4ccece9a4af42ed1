"""Single sign-on against a real OpenID Connect provider (django-oauth-toolkit, its own
process on 127.0.0.1): the whole round trip (authorize, code, token, id token checked
against the provider's keys, userinfo), accounts matched by verified email, a new one
made with no password and no site, an unverified email refused, and SSO_ONLY."""

from urllib.parse import urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model

from team import sso
from team.roles import add_member
from tests.oidc import CLIENT_ID, CLIENT_SECRET, oidc_provider  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.one_leg, pytest.mark.slow]


@pytest.fixture
def sso_on(settings, oidc_provider):  # noqa: F811
    settings.OIDC_ISSUER = oidc_provider
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend", "team.sso.Backend"]
    sso._discovered.clear()
    return oidc_provider


def sign_in(client, issuer: str, who: str):
    """Tally's SSO button, the provider's sign-in as `who`, back to Tally's callback."""
    start = client.get("/oidc/authenticate/?next=/")
    assert start.status_code == 302 and start["Location"].startswith(issuer + "/authorize/")
    provider = requests.Session()
    assert provider.get(issuer.rsplit("/o", 1)[0] + f"/login-as/{who}", timeout=10).ok
    authorized = provider.get(start["Location"], allow_redirects=False, timeout=10)
    assert authorized.status_code == 302, authorized.text[:300]
    back = urlsplit(authorized.headers["Location"])
    assert back.path == "/oidc/callback/" and "code=" in back.query
    return client.get(f"{back.path}?{back.query}")


def test_a_member_signs_in_by_their_verified_email(client, site, sso_on, django_user_model):
    ana = django_user_model.objects.create_user("ana-here", "ANA@example.org", "pw-12345678-long")
    add_member(site, ana, "viewer")
    done = sign_in(client, sso_on, "ana")
    assert done.status_code == 302 and done["Location"] == "/"
    assert int(client.session["_auth_user_id"]) == ana.pk
    assert client.get("/dashboard/example.com/").status_code == 200


def test_a_new_email_gets_an_account_with_no_password_and_no_site(client, site, sso_on):
    done = sign_in(client, sso_on, "bo")
    assert done.status_code == 302
    bo = get_user_model().objects.get(email="bo@example.org")
    assert bo.username == "bo" and not bo.has_usable_password()
    assert "No site has been shared with you yet" in client.get("/").content.decode()
    assert client.get("/dashboard/example.com/").status_code == 404


def test_an_unverified_email_signs_no_one_in(client, sso_on, django_user_model):
    django_user_model.objects.create_user("cy", "cy@example.org", "pw-12345678-long")
    done = sign_in(client, sso_on, "unverified-cy")
    assert done.status_code == 302 and "sso=failed" in done["Location"]
    assert "_auth_user_id" not in client.session
    assert "verified email" in client.get(done["Location"]).content.decode()


def test_sso_only_turns_passwords_off(client, sso_on, settings, django_user_model):
    django_user_model.objects.create_user("dee", "dee@example.org", "pw-12345678-long")
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with single sign-on" in page and 'name="password"' in page
    settings.SSO_ONLY = True
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with single sign-on" in page and 'name="password"' not in page
    refused = client.post("/accounts/login/", {"username": "dee", "password": "pw-12345678-long"})
    assert refused.status_code == 403 and "_auth_user_id" not in client.session
