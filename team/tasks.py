"""The team's Celery jobs (config/celery.py schedules them)."""

from celery import shared_task

from . import alerts, reports


@shared_task(ignore_result=True)
def send_due_reports():
    """Hourly: the email reports whose week or month has ended in their site's time zone."""
    reports.send_due()


@shared_task(ignore_result=True)
def check_alerts():
    """Every minute: the traffic alerts, and the deliveries whose wait is over."""
    alerts.check()
    alerts.retry_due()
