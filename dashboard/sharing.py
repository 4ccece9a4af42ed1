"""A share link's protections as its pages meet them (the options: analytics.models.
ShareLinkOptions): a password asked once, then remembered by a signed cookie bound to the
link and to the password (changing the password locks everyone out again); and the
headers that let an embedding page frame it (only the origins listed)."""

import hashlib

from django.conf import settings
from django.contrib.auth.hashers import check_password
from django.core import signing

from analytics.models import ShareLinkOptions
from server.middleware import content_security_policy

UNLOCK_SALT = "dashboard.sharing.unlock"
UNLOCK_SECONDS = 7 * 24 * 3600


def cookie_name(token: str) -> str:
    return "tally_share_" + hashlib.sha256(token.encode()).hexdigest()[:16]


def _bound(token: str, options: ShareLinkOptions) -> str:
    return hashlib.sha256(f"{token}\x1f{options.password}".encode()).hexdigest()


def unlocked(request, token: str, options: ShareLinkOptions | None) -> bool:
    """May this request see the link's pages (no password, or the right cookie)?"""
    if options is None or not options.password:
        return True
    value = request.COOKIES.get(cookie_name(token), "")
    try:
        return signing.loads(value, salt=UNLOCK_SALT, max_age=UNLOCK_SECONDS) == _bound(token, options)
    except signing.BadSignature:
        return False


def unlock(response, token: str, options: ShareLinkOptions, password: str) -> bool:
    """Check the password; when right, remember it on the response (a cookie)."""
    if not options.password or not check_password(password, options.password):
        return False
    response.set_cookie(
        cookie_name(token),
        signing.dumps(_bound(token, options), salt=UNLOCK_SALT),
        max_age=UNLOCK_SECONDS,
        httponly=True,
        secure=settings.SESSION_COOKIE_SECURE,
        samesite="None" if options.embed and settings.SESSION_COOKIE_SECURE else "Lax",
    )
    return True


def frame_for(request, response, options: ShareLinkOptions | None):
    """Let the listed origins frame an embeddable link's page (CSP frame-ancestors; no
    X-Frame-Options, which cannot list origins); every other page keeps 'none'."""
    if options is None or not options.embed or not options.origin_list:
        return response
    response.xframe_options_exempt = True
    response["Content-Security-Policy"] = content_security_policy(request, " ".join(options.origin_list))
    return response
