"""The login page, with failed attempts throttled per account and client IP, and per client IP.

Password guessing costs a GCRA bucket's budget per failed attempt (analytics/store/
limits.py): at most LOGIN_FAILURES_PER_ACCOUNT failures in 15 minutes for one user name
from one client, and LOGIN_FAILURES_PER_IP for one client whatever the names, then `429`
with Retry-After until the bucket drains. Per account *and* client: a bucket per account
alone let anyone lock any account out (10 wrong passwords from anywhere refused the right
one from everywhere). A successful login costs nothing; a refused attempt is not even checked.
"""

import hashlib
import logging

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.shortcuts import render

from analytics.api.http import client_ip
from analytics.store import keys
from analytics.store.connection import OUTAGE, get_redis
from analytics.store.limits import Bucket, Limited, Rate, throttle

WINDOW_MINUTES = 15
log = logging.getLogger(__name__)


def _buckets(request, cost: int) -> list[Bucket]:
    def digest(value: str) -> str:
        return hashlib.blake2b(value.encode(), key=settings.SECRET_KEY.encode()[:64], digest_size=12).hexdigest()

    user, ip = request.POST.get("username", "").strip().lower()[:150], client_ip(request)
    wanted = []
    for kind, value, allowed in (
        ("user", user and f"{user}\0{ip}", settings.LOGIN_FAILURES_PER_ACCOUNT),
        ("ip", ip, settings.LOGIN_FAILURES_PER_IP),
    ):
        if allowed and value:
            wanted.append(Bucket(keys.rate_login(kind, digest(value)), Rate(allowed / WINDOW_MINUTES, allowed), cost))
    return wanted


class ThrottledLoginView(auth_views.LoginView):
    """While Redis is down or frozen the buckets cannot be read: logins go on unthrottled
    (the database checks the password), rather than nobody logging in."""

    def get_context_data(self, **kwargs):
        sso = bool(settings.OIDC_ISSUER)
        return super().get_context_data(
            **kwargs, sso=sso, sso_only=sso and settings.SSO_ONLY, sso_failed="sso" in self.request.GET
        )

    def post(self, request, *args, **kwargs):
        if settings.OIDC_ISSUER and settings.SSO_ONLY:  # (passwords are off: single sign-on only)
            return render(request, "registration/login.html", self.get_context_data(), status=403)
        try:
            throttle(get_redis(), _buckets(request, cost=0), "too many failed logins")  # a look, no charge
        except Limited as e:
            response = render(request, "registration/throttled.html", {"retry_after": e.retry_after}, status=429)
            response["Retry-After"] = str(e.retry_after)
            return response
        except OUTAGE:
            log.warning("login: rate-limit buckets unavailable (storage outage); checking the password unthrottled")
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        try:
            throttle(get_redis(), _buckets(self.request, cost=1), "too many failed logins")
        except (Limited, *OUTAGE):
            pass  # this failure is the one that filled a bucket (the next attempt is refused), or no bucket to charge
        return super().form_invalid(form)
