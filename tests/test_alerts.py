"""Traffic alerts with real parts: a spike and a drop counted from real events in Redis,
mailed through a real SMTP server, posted to a real HTTP receiver as Slack's and as a
signed JSON webhook (the receiver checks the HMAC), retried with backoff when the
receiver fails, at most once a day, logged on the settings page."""

import hashlib
import hmac
import json
from datetime import UTC, datetime, time, timedelta

import pytest

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.sites import SiteInfo
from team import alerts
from team.models import Alert, Delivery
from team.roles import add_member
from tests.http_receiver import receiver  # noqa: F401 (a fixture)
from tests.smtp_server import body, smtp  # noqa: F401 (a fixture)

pytestmark = pytest.mark.one_leg  # (pages, mail and webhooks: the numbers behind them are tested on every server)

PASSWORD = "pw-12345678-long"


def visits(r, site, when, count, prefix="v"):
    hits = [Hit(when, "/", "pageview", identity_source(None, f"{prefix}{n}", None, None)) for n in range(count)]
    record(r, SiteInfo.from_model(site), hits, now=when)


def test_a_spike_goes_to_mail_slack_and_a_signed_webhook_once_a_day(site, r, smtp, receiver):  # noqa: F811
    now = datetime.now(UTC)
    alert = Alert.objects.create(
        site=site, kind="spike", threshold=5, emails="ops@example.org",
        slack_url=receiver.url + "/slack", webhook_url=receiver.url + "/hook",
    )  # fmt: skip
    visits(r, site, now, 5)
    assert alerts.check(now) == 0  # (5 is not above 5)
    visits(r, site, now, 8, prefix="w")
    assert alerts.check(now) == 1
    (mail,) = smtp.wait(1)
    assert "Traffic spike on example.com" in mail["Subject"] and "13 visitors in the last 5 minutes" in body(mail)
    slack, hook = sorted(receiver.wait(2), key=lambda q: q["path"])[::-1]
    assert slack["path"] == "/slack" and "13 visitors" in json.loads(slack["body"])["text"]
    sent = json.loads(hook["body"])
    assert (sent["site"], sent["alert"], sent["visitors"], sent["threshold"]) == ("example.com", "spike", 13, 5)
    expected = hmac.new(alert.webhook_secret.encode(), hook["body"], hashlib.sha256).hexdigest()
    assert hook["headers"][alerts.SIGNATURE] == f"sha256={expected}"
    assert Delivery.objects.filter(status="sent").count() == 3
    assert alerts.check(now + timedelta(minutes=1)) == 0  # (once a day)


def test_a_failing_receiver_is_retried_with_backoff_then_given_up(site, r, receiver):  # noqa: F811
    now = datetime.now(UTC)
    Alert.objects.create(site=site, kind="spike", threshold=1, webhook_url=receiver.url + "/hook")
    visits(r, site, now, 3)
    receiver.failures = 2
    alerts.check(now)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("pending", 1) and "500" in delivery.last_error
    assert delivery.next_try == now + alerts.BACKOFF[0]
    assert alerts.retry_due(now + timedelta(seconds=10)) == 0 and len(receiver.requests) == 1  # (not yet)
    assert alerts.retry_due(now + alerts.BACKOFF[0]) == 0  # (the second failure)
    delivery.refresh_from_db()
    assert delivery.attempts == 2 and delivery.next_try == now + alerts.BACKOFF[0] + alerts.BACKOFF[1]
    assert alerts.retry_due(delivery.next_try) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, len(receiver.requests)) == ("sent", 3, 3)
    # a receiver that never answers well: given up after the last wait
    receiver.failures = 100
    alert = Alert.objects.create(site=site, kind="spike", threshold=1, webhook_url=receiver.url + "/down")
    gone = alerts.fire(alert, {"visitors": 3, "text": "test"}, now)[0]
    at = now
    for wait in alerts.BACKOFF:
        at += wait
        alerts.retry_due(at)
    gone.refresh_from_db()
    assert (gone.status, gone.attempts, gone.next_try) == ("failed", len(alerts.BACKOFF) + 1, None)


def test_a_drop_against_the_same_weekdays_usual_so_far(site, r, smtp):  # noqa: F811
    """The four Tuesdays before had 40 visitors each by 10:59; today, 10 by then: 25%."""
    site.timezone = "UTC"
    site.save()
    today = datetime.now(UTC).date()
    now = datetime.combine(today, time(10, 30), tzinfo=UTC)
    for weeks in range(1, 5):
        visits(r, site, datetime.combine(today - timedelta(weeks=weeks), time(9), tzinfo=UTC), 40, prefix=f"w{weeks}-")
    visits(r, site, datetime.combine(today, time(9), tzinfo=UTC), 10, prefix="t")
    Alert.objects.create(site=site, kind="drop", threshold=30, emails="ops@example.org")
    assert alerts.check(now) == 1
    (mail,) = smtp.wait(1)
    assert "Traffic drop on example.com" in mail["Subject"]
    assert "10 visitors today until 10:59, 25% of the usual 40" in body(mail)
    Alert.objects.update(last_day=None, threshold=20)
    assert alerts.check(now) == 0  # (25% is not below 20%)


def test_webhooks_into_private_networks_are_refused_by_default(settings):
    settings.ALERT_WEBHOOKS_PRIVATE = False
    for url in (
        "http://127.0.0.1:9/x",
        "http://10.1.2.3/x",
        "http://[::1]/x",
        "file:///etc/passwd",
        "http://169.254.169.254/",
    ):
        with pytest.raises(ValueError):
            alerts.check_address(url)


def test_the_alerts_page_adds_tests_and_logs(client, site, receiver, django_user_model):  # noqa: F811
    admin = django_user_model.objects.create_user("admin", "admin@example.org", PASSWORD)
    add_member(site, admin, "admin")
    client.force_login(admin)
    page = "/dashboard/example.com/settings/alerts"
    client.post(page, {"action": "add", "kind": "drop", "threshold": "150", "emails": "a@example.org"})
    client.post(page, {"action": "add", "kind": "spike", "threshold": "50"})
    client.post(page, {"action": "add", "kind": "spike", "threshold": "50", "webhook_url": "https://ex ample.org/x"})
    assert Alert.objects.count() == 0
    client.post(page, {"action": "add", "kind": "spike", "threshold": "50", "webhook_url": receiver.url + "/hook"})
    alert = Alert.objects.get()
    client.post(page, {"action": "test", "alert": alert.pk})
    (hook,) = receiver.wait(1)
    assert json.loads(hook["body"])["message"].startswith("a test of this alert")
    html = client.get(page).content.decode()
    assert alert.webhook_secret in html and "Sent</td>" not in html and "Sent" in html
    editor = django_user_model.objects.create_user("editor", "e@example.org", PASSWORD)
    add_member(site, editor, "editor")
    client.force_login(editor)
    assert client.get(page).status_code == 403


def test_a_webhooks_redirect_is_not_followed(site, receiver):  # noqa: F811
    """The address checked is the one posted to: a redirect (to 127.0.0.1, or a cloud's
    metadata address) would get past the check, so it is a failure, not followed."""
    alert = Alert.objects.create(site=site, kind="spike", threshold=1, webhook_url=receiver.url + "/redirect")
    (delivery,) = alerts.fire(alert, {"visitors": 2, "text": "test"}, datetime.now(UTC))
    delivery.refresh_from_db()
    assert delivery.status == "pending" and "redirect not followed" in delivery.last_error
    assert [q["path"] for q in receiver.requests] == ["/redirect"]  # (never /landed)
