"""Single sign-on with OpenID Connect (mozilla-django-oidc): the issuer, client id and
secret come from the environment (OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET); the
provider's endpoints from its discovery document (fetched once, kept). An account is
matched by its **verified** email (a claim `email_verified` that is not true signs no one
in); a new address gets a new account with no password and no site (an admin invites
it). SSO_ONLY=true leaves the SSO button alone on the login page."""

import logging
import re

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationRequestView

log = logging.getLogger(__name__)

ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
_discovered: dict[str, dict] = {}


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def discovery(issuer: str) -> dict:
    """The provider's /.well-known/openid-configuration, fetched once per process."""
    if issuer not in _discovered:
        answer = requests.get(issuer.rstrip("/") + "/.well-known/openid-configuration", timeout=10)
        answer.raise_for_status()
        found = answer.json()
        if found.get("issuer", "").rstrip("/") != issuer.rstrip("/"):
            raise ValueError(f"the discovery document names another issuer: {found.get('issuer')!r}")
        _discovered[issuer] = found
    return _discovered[issuer]


def setting(attr: str, *default):
    """mozilla-django-oidc's settings, the provider's endpoints from discovery unless set."""
    if attr in ENDPOINTS and not getattr(settings, attr, ""):
        return discovery(settings.OIDC_ISSUER)[ENDPOINTS[attr]]
    return import_from_settings(attr, *default)


class Backend(OIDCAuthenticationBackend):
    get_settings = staticmethod(setting)

    def verify_claims(self, claims) -> bool:
        if not claims.get("email") or claims.get("email_verified") is not True:
            log.warning("SSO: refused %s: its email is missing or not verified", claims.get("sub"))
            return False
        return True

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(email__iexact=claims["email"], is_active=True)

    def create_user(self, claims):
        user = self.UserModel.objects.create_user(_free_username(claims), email=claims["email"].lower())
        user.set_unusable_password()
        user.save(update_fields=["password"])
        return user


def _free_username(claims) -> str:
    """A user name from the claims (preferred_username, or the email's name), made unique."""
    base = (
        re.sub(r"[^\w.@+-]", "", claims.get("preferred_username") or claims["email"].split("@", 1)[0])[:140] or "user"
    )
    User = get_user_model()
    name, n = base, 1
    while User.objects.filter(username__iexact=name).exists():
        n += 1
        name = f"{base}{n}"
    return name


class AuthenticateView(OIDCAuthenticationRequestView):
    get_settings = staticmethod(setting)
