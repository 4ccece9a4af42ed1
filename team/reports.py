"""Email reports: each site's weekly or monthly numbers mailed to its recipients, in the
site's time zone. The numbers come from the query runner (analytics.queries.run), as the
read API's and the dashboard's do, so a report says what they say for that period.

Celery beat asks every hour (team.tasks.send_due_reports); a report is due once the
period it covers has ended in the site's time zone (the week before, Monday to Sunday;
the month before) and goes once: sending first claims the period on its row
(`last_period`), a failed send gives it back for the next hour.
"""

import logging
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.conf import settings
from django.core import signing
from django.core.mail import EmailMultiAlternatives
from django.db.models import Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from analytics import queries
from analytics.models import Site
from analytics.sites import SiteInfo
from analytics.store.connection import get_redis

from .mail import link
from .models import Report

log = logging.getLogger(__name__)

CARDS = (
    ("visitors", "Unique visitors"),
    ("visits", "Visits"),
    ("pageviews", "Pageviews"),
    ("bounce_rate", "Bounce rate"),
    ("visit_duration", "Visit duration"),
)
TOP = 5
UNSUBSCRIBE_SALT = "team.reports.unsubscribe"


@dataclass(frozen=True)
class Period:
    start: date
    end: date
    key: str  # "2026-W47", "2026-10": what a report row remembers having sent
    label: str


def last_period(frequency: str, today: date) -> Period:
    """The last whole week (Monday to Sunday) or calendar month before `today`."""
    if frequency == Report.Frequency.WEEKLY:
        end = today - timedelta(days=today.weekday() + 1)
        start = end - timedelta(days=6)
        year, week, _ = start.isocalendar()
        return Period(start, end, f"{year}-W{week:02d}", f"the week of {start:%-d %b} – {end:%-d %b %Y}")
    end = today.replace(day=1) - timedelta(days=1)
    start = end.replace(day=1)
    return Period(start, end, f"{start:%Y-%m}", f"{start:%B %Y}")


def compose(site: Site, period: Period) -> dict:
    """The report's numbers: the cards with their change against the period before, and
    the top sources, pages and goals (the runner's answers, as the API gives them)."""
    r, info = get_redis(), SiteInfo.from_model(site)

    def ask(kind: str, **kwargs):
        return queries.run(r, queries.Query(info, period.start, period.end, kind, **kwargs))

    totals = ask("aggregate", metrics=tuple(key for key, _ in CARDS), compare="previous_period").totals
    return {
        "site": site,
        "period": period,
        "cards": [{"key": key, "label": label, **totals[key]} for key, label in CARDS],
        "sources": ask("breakdown", dimension="source", limit=TOP).rows,
        "pages": ask("breakdown", dimension="page", limit=TOP).rows,
        "goals": ask("breakdown", dimension="goal", limit=TOP).rows,
        "dashboard": link(
            reverse("dashboard:site", args=[site.domain])
            + f"?period=custom&from={period.start.isoformat()}&to={period.end.isoformat()}"
        ),
    }


def unsubscribe_token(report: Report) -> str:
    return signing.dumps(report.pk, salt=UNSUBSCRIBE_SALT)


def report_for_token(token: str) -> Report | None:
    try:
        pk = signing.loads(token, salt=UNSUBSCRIBE_SALT)
    except signing.BadSignature:
        return None
    return Report.objects.select_related("site").filter(pk=pk).first()


def send(report: Report, period: Period, to: str | None = None, numbers: dict | None = None, test: bool = False) -> int:
    """Mail one report (to its recipient, or to `to`), HTML and plain text, with an
    unsubscribe link (and the List-Unsubscribe headers mail clients show); a test says so."""
    numbers = numbers or compose(report.site, period)
    unsubscribe = link(reverse("team:unsubscribe", args=[unsubscribe_token(report)]))
    context = {**numbers, "report": report, "unsubscribe": unsubscribe, "test": test}
    subject = f"{report.site.domain}: {numbers['cards'][0]['value'] or 0:,} visitors in {period.label}"
    if test:
        subject = "[Test] " + subject
    message = EmailMultiAlternatives(
        subject,
        render_to_string("team/mail/report.txt", context),
        settings.DEFAULT_FROM_EMAIL,
        [to or report.email],
        headers={"List-Unsubscribe": f"<{unsubscribe}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"},
    )
    message.attach_alternative(render_to_string("team/mail/report.html", context), "text/html")
    return message.send()


def send_due(now: datetime | None = None) -> int:
    """Send every report whose period has ended in its site's time zone and was not sent
    yet; how many were sent."""
    now = now or timezone.now()
    sent = 0
    for report in Report.objects.select_related("site").order_by("pk"):
        today = now.astimezone(SiteInfo.from_model(report.site).tz).date()
        period = last_period(report.frequency, today)
        if report.last_period == period.key:
            continue
        claimed = (
            Report.objects.filter(pk=report.pk)
            .filter(~Q(last_period=period.key))
            .update(last_period=period.key, last_sent=now)
        )
        if not claimed:
            continue  # (another worker has it)
        try:
            sent += send(report, period)
        except Exception:
            log.exception("report %s for %s failed; retried next hour", report.pk, period.key)
            Report.objects.filter(pk=report.pk).update(last_period=report.last_period, last_sent=report.last_sent)
    return sent
