"""Traffic alerts: a spike (visitors of the last five minutes above a number) or a drop
(today's visitors so far below a share of the same weekday's usual so far), checked by
Celery beat every minute, each firing at most once a day (the site's), to email, a
Slack-compatible incoming webhook and a generic JSON webhook signed with HMAC-SHA256.

Every message is a Delivery row: tried at once, and while it fails again after BACKOFF
(30 s, 2 min, 10 min, 1 h, 6 h), then given up; the settings page shows the log. Webhook
addresses in private, loopback or link-local networks are refused unless
ALERT_WEBHOOKS_PRIVATE is set (a site's admin must not reach the server's own network).
"""

import hashlib
import hmac
import ipaddress
import json
import logging
import socket
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from statistics import mean
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMessage
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from analytics import queries
from analytics.models import Site
from analytics.sites import SiteInfo
from analytics.store.connection import get_redis

from .mail import link
from .models import Alert, Delivery

log = logging.getLogger(__name__)

BACKOFF = (timedelta(seconds=30), timedelta(minutes=2), timedelta(minutes=10), timedelta(hours=1), timedelta(hours=6))
WEEKS = 4  # the drop alert's usual: the same weekday of the weeks before
MIN_USUAL = 10  # a drop needs a usual of at least this many visitors so far (a quiet site's noise is no drop)
TIMEOUT = 10
SIGNATURE = "X-Tally-Signature"


def check(now: datetime | None = None) -> int:
    """Check every enabled alert; how many fired."""
    now = now or timezone.now()
    r = get_redis()
    fired = 0
    for alert in Alert.objects.filter(enabled=True).select_related("site"):
        info = SiteInfo.from_model(alert.site)
        today = now.astimezone(info.tz).date()
        if alert.last_day == today:
            continue
        found = _spike(r, info, alert, now) if alert.kind == Alert.Kind.SPIKE else _drop(r, info, alert, now)
        if found is None:
            continue
        claimed = Alert.objects.filter(pk=alert.pk).filter(Q(last_day__isnull=True) | ~Q(last_day=today))
        if claimed.update(last_day=today, last_fired=now):
            fire(alert, found, now)
            fired += 1
    return fired


def _spike(r, info: SiteInfo, alert: Alert, now: datetime) -> dict | None:
    visitors = queries.realtime_visitors(r, info, now)
    if visitors <= alert.threshold:
        return None
    return {
        "visitors": visitors,
        "text": f"{visitors:,} visitors in the last 5 minutes (the alert is above {alert.threshold:,})",
    }


def _drop(r, info: SiteInfo, alert: Alert, now: datetime) -> dict | None:
    local = now.astimezone(info.tz)
    hour, today = local.hour, local.date()
    if hour < 1:
        return None  # (the first hour says too little)
    so_far = queries.visitors_until(r, info, today, hour)
    before = [queries.visitors_until(r, info, today - timedelta(weeks=n), hour) for n in range(1, WEEKS + 1)]
    known = [n for n in before if n is not None]
    if not known or so_far is None:
        return None
    usual = mean(known)
    if usual < MIN_USUAL or so_far * 100 >= usual * alert.threshold:
        return None
    share = round(100 * so_far / usual)
    return {
        "visitors": so_far,
        "usual": round(usual, 1),
        "text": f"{so_far:,} visitors today until {hour:02d}:59, {share}% of the usual {usual:,.0f} "
        f"for a {local:%A} so far (the alert is below {alert.threshold}%)",
    }


def fire(alert: Alert, found: dict, now: datetime) -> list[Delivery]:
    """Queue the alert's messages on each of its channels, and try them at once."""
    site: Site = alert.site
    dashboard = link(
        reverse("dashboard:site", args=[site.domain])
        + ("?period=realtime" if alert.kind == "spike" else "?period=today")
    )
    title = f"{'Traffic spike' if alert.kind == Alert.Kind.SPIKE else 'Traffic drop'} on {site.domain}"
    payload = {
        "site": site.domain,
        "alert": alert.kind,
        "threshold": alert.threshold,
        "visitors": found["visitors"],
        **({"usual": found["usual"]} if "usual" in found else {}),
        "message": found["text"],
        "at": now.isoformat(),
        "dashboard": dashboard,
    }
    made = [
        Delivery(alert=alert, channel="email", target=address, body=f"{title}\n\n{found['text']}.\n\n{dashboard}\n")
        for address in alert.addresses
    ]
    if alert.slack_url:
        made.append(
            Delivery(alert=alert, channel="slack", target=alert.slack_url,
                     body=json.dumps({"text": f"*{title}*: {found['text']}. <{dashboard}|Open the dashboard>"}))
        )  # fmt: skip
    if alert.webhook_url:
        made.append(Delivery(alert=alert, channel="webhook", target=alert.webhook_url, body=json.dumps(payload)))
    for delivery in made:
        delivery.next_try = now
        delivery.save()
        attempt(delivery, now)
    return made


def retry_due(now: datetime | None = None) -> int:
    """Try again every delivery whose wait is over; how many went."""
    now = now or timezone.now()
    went = 0
    for delivery in Delivery.objects.filter(status=Delivery.Status.PENDING, next_try__lte=now).select_related("alert"):
        went += attempt(delivery, now)
    return went


def attempt(delivery: Delivery, now: datetime) -> bool:
    """One try: sent, or the next wait (or given up after the last)."""
    try:
        _send(delivery)
    except Exception as e:  # (any failure of the channel: counted, retried)
        delivery.attempts += 1
        delivery.last_error = f"{type(e).__name__}: {e}"[:500]
        if delivery.attempts > len(BACKOFF):
            delivery.status, delivery.next_try = Delivery.Status.FAILED, None
        else:
            delivery.next_try = now + BACKOFF[delivery.attempts - 1]
        delivery.save(update_fields=["attempts", "last_error", "status", "next_try"])
        log.warning("alert delivery %s failed (%s)", delivery.pk, delivery.last_error)
        return False
    delivery.attempts += 1
    delivery.status, delivery.sent, delivery.next_try = Delivery.Status.SENT, now, None
    delivery.save(update_fields=["attempts", "status", "sent", "next_try"])
    return True


def _send(delivery: Delivery) -> None:
    if delivery.channel == "email":
        title = delivery.body.split("\n", 1)[0]
        EmailMessage(title, delivery.body, settings.DEFAULT_FROM_EMAIL, [delivery.target]).send()
        return
    body = delivery.body.encode()
    headers = {"Content-Type": "application/json", "User-Agent": "Tally alerts"}
    if delivery.channel == "webhook":
        headers[SIGNATURE] = "sha256=" + sign(delivery.alert.webhook_secret, body)
        headers["X-Tally-Delivery"] = str(delivery.pk)
    check_address(delivery.target)
    request = urllib.request.Request(delivery.target, data=body, headers=headers, method="POST")
    with _NO_REDIRECTS.open(request, timeout=TIMEOUT) as answer:  # (http(s) only: check_address)
        if not 200 <= answer.status < 300:
            raise RuntimeError(f"HTTP {answer.status}")


class _Refused(urllib.request.HTTPRedirectHandler):
    """A webhook's redirect is not followed: the address checked is the one posted to (a
    public URL redirecting to 127.0.0.1 or 169.254.169.254 would pass the check otherwise)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise urllib.error.HTTPError(req.full_url, code, f"redirect not followed (HTTP {code})", headers, fp)


_NO_REDIRECTS = urllib.request.build_opener(_Refused)


def sign(secret: str, body: bytes) -> str:
    """HMAC-SHA256 of the body with the alert's secret, hex: what the receiver recomputes."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def check_address(url: str) -> None:
    """Refuse what a webhook must not reach: other schemes, and (unless allowed) hosts
    that resolve into private, loopback, link-local or reserved networks."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url[:100]}")
    if settings.ALERT_WEBHOOKS_PRIVATE:
        return
    for *_, address in socket.getaddrinfo(parts.hostname, parts.port or 443, proto=socket.IPPROTO_TCP):
        ip = ipaddress.ip_address(address[0])
        if ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast:
            raise ValueError(f"{parts.hostname} is in a private network (set ALERT_WEBHOOKS_PRIVATE to allow)")
