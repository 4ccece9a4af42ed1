"""The team's Celery jobs (config/celery.py schedules them)."""

from celery import shared_task

from . import reports


@shared_task(ignore_result=True)
def send_due_reports():
    """Hourly: the email reports whose week or month has ended in their site's time zone."""
    reports.send_due()
