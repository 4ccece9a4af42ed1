"""Email reports through a real SMTP server: the weekly report's numbers are the read
API's for that week (brute force on the events too), it goes once a period, in the site's
time zone, with an unsubscribe link that works; the settings page and the command send
one on demand."""

import io
import re
from datetime import UTC, datetime, time, timedelta

import pytest
from django.core.management import call_command

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.ingest.visit import visit_attrs
from analytics.sites import SiteInfo
from team import reports
from team.models import AuditEvent, Report
from team.roles import add_member
from tests.smtp_server import body, smtp  # noqa: F401 (a fixture)

pytestmark = pytest.mark.one_leg  # (pages, mail and webhooks: the numbers behind them are tested on every server)

PASSWORD = "pw-12345678-long"


@pytest.fixture
def week(site, r):
    """Visits on each day of the last whole week (and the week before, for the change)."""
    info = SiteInfo.from_model(site)
    today = datetime.now(UTC).date()
    period = reports.last_period("weekly", today)
    people: dict = {}
    hits = []
    for offset in range(14):
        day = period.start - timedelta(days=7) + timedelta(days=offset)
        for n in range(5 + offset):
            visitor = f"v{(n * 7 + offset) % 23}"
            at = datetime.combine(day, time(9 + n % 8), tzinfo=UTC)
            url = f"https://example.com/p{n % 3}"
            attrs = visit_attrs("example.com", url, None, None, None, None)
            hits.append(Hit(at, f"/p{n % 3}", "pageview", identity_source(None, visitor, None, None), attrs=attrs))
            if day >= period.start:
                people.setdefault(visitor, 0)
    hits.sort(key=lambda h: h.ts)
    record(r, info, hits)
    return period, set(people)


def test_the_weekly_report_says_what_the_api_says_for_that_week(client, make_site, site, week, smtp, r):  # noqa: F811
    period, visitors = week
    from analytics.models import ApiKey

    key = ApiKey.create(site)
    Report.objects.create(site=site, email="boss@example.org", frequency="weekly")
    sent = reports.send_due(now=datetime.combine(period.end + timedelta(days=1), time(8), tzinfo=UTC))
    assert sent == 1
    (mail,) = smtp.wait(1)
    text = body(mail)
    api = client.get(
        "/api/v1/stats/aggregate",
        {
            "site": site.domain,
            "from": period.start.isoformat(),
            "to": period.end.isoformat(),
            "metrics": "visitors,visits,pageviews",
            "compare": "previous_period",
        },
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()["results"]
    assert api["visitors"]["value"] == len(visitors)  # (the API against the events)
    assert f"Unique visitors: {api['visitors']['value']:,}" in text
    assert f"Visits: {api['visits']['value']:,}" in text and f"Pageviews: {api['pageviews']['value']:,}" in text
    assert re.search(r"Unique visitors: [\d,]+ \([+−-]?\d", text)  # (with its change)
    assert f"{len(visitors):,} visitors in the week of" in mail["Subject"]
    assert "/p0" in text and "Direct / None" in text  # (top pages and sources)
    html = body(mail, "html")
    assert f"{api['pageviews']['value']:,}" in html and "Unsubscribe" in html
    assert mail["List-Unsubscribe"].strip().startswith("<http")
    # once a period
    assert reports.send_due(now=datetime.combine(period.end + timedelta(days=2), time(8), tzinfo=UTC)) == 0
    # the link stops it
    link = re.search(r"Stop it: (\S+)", text).group(1)
    path = "/" + link.split("/", 3)[3]
    assert "Unsubscribe" in client.get(path).content.decode()
    assert client.post(path).status_code == 200 and not Report.objects.exists()
    assert client.get(path).status_code == 410
    assert AuditEvent.objects.filter(action="report.unsubscribed").exists()


def test_a_report_is_due_once_its_week_has_ended_in_the_sites_time_zone(site, week, smtp):  # noqa: F811
    """Monday 00:30 in Auckland is still Sunday in UTC: the report of the week that just
    ended there goes then, not a day later."""
    site.timezone = "Pacific/Auckland"
    site.save()
    report = Report.objects.create(site=site, email="kiwi@example.org", frequency="weekly")
    monday = datetime(2026, 11, 23, 0, 30)  # a Monday, local
    from zoneinfo import ZoneInfo

    now = monday.replace(tzinfo=ZoneInfo("Pacific/Auckland")).astimezone(UTC)
    assert now.weekday() == 6  # (Sunday in UTC)
    assert reports.send_due(now=now) == 1
    report.refresh_from_db()
    assert report.last_period == "2026-W47"  # (16-22 November)
    assert reports.last_period("monthly", datetime(2026, 11, 1).date()).key == "2026-10"


def test_the_settings_page_adds_recipients_and_sends_a_test(client, site, week, smtp, django_user_model):  # noqa: F811
    admin = django_user_model.objects.create_user("admin", "admin@example.org", PASSWORD)
    add_member(site, admin, "admin")
    client.force_login(admin)
    page = "/dashboard/example.com/settings/reports"
    client.post(page, {"action": "add", "email": "Team@Example.org", "frequency": "monthly"})
    client.post(page, {"action": "add", "email": "not-an-address", "frequency": "weekly"})
    report = Report.objects.get()
    assert (report.email, report.frequency) == ("team@example.org", "monthly")
    client.post(page, {"action": "test", "report": report.pk})
    (mail,) = smtp.wait(1)
    assert mail["To"] == "admin@example.org" and mail["Subject"].startswith("[Test] example.com")
    assert "A test of the monthly report" in body(mail)
    assert "Sent the monthly report" in client.get(page).content.decode()
    viewer = django_user_model.objects.create_user("viewer", "v@example.org", PASSWORD)
    add_member(site, viewer, "viewer")
    client.force_login(viewer)
    assert client.post(page, {"action": "test", "report": report.pk}).status_code == 403


def test_manage_py_send_reports_now_to_an_address(site, week, smtp):  # noqa: F811
    out = io.StringIO()
    call_command("send_reports", "--site", "example.com", "--now", "--to", "me@example.org", stdout=out)
    (mail,) = smtp.wait(1)
    assert mail["To"] == "me@example.org" and "Sent 1 report(s)." in out.getvalue()
