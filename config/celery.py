"""The Celery app (Redis as broker) and the beat schedule, declared here and only here.

Every entry expires after about 1.5x its interval, so a backed-up worker does not run a
stale copy of a job many times over.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("tally")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

MINUTE = 60
FIVE_MINUTES = 5 * 60
HOUR = 60 * 60
DAY = 24 * HOUR

app.conf.beat_schedule = {
    # today and yesterday, still changing
    "rollup-recent": {
        "task": "analytics.tasks.rollup_recent",
        "schedule": FIVE_MINUTES,
        "options": {"expires": FIVE_MINUTES * 1.5},
    },
    # closed days: hourly, so each site's midnight (in its own time zone) is seen within
    # the hour; a missed run is caught up by the next one
    "rollup-closed": {
        "task": "analytics.tasks.rollup_closed",
        "schedule": HOUR,
        "options": {"expires": HOUR * 1.5},
    },
    # events kept on local disk while Redis was down (analytics/capture/spool.py)
    "replay-spool": {
        "task": "analytics.tasks.replay_spool",
        "schedule": MINUTE,
        "options": {"expires": MINUTE * 1.5},
    },
    # traffic alerts (spike, drop), and retries of their deliveries
    "check-alerts": {
        "task": "team.tasks.check_alerts",
        "schedule": MINUTE,
        "options": {"expires": MINUTE * 1.5},
    },
    # email reports, once their week or month has ended in their site's time zone
    "send-reports": {
        "task": "team.tasks.send_due_reports",
        "schedule": HOUR,
        "options": {"expires": HOUR * 1.5},
    },
    "apply-expiry": {
        "task": "analytics.tasks.apply_expiry",
        "schedule": DAY,
        "options": {"expires": DAY * 1.5},
    },
}
