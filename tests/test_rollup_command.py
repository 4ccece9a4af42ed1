"""manage.py rollup: ranges, catch-up, bad input."""

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command

from analytics.models import DailyMetrics, Retention
from analytics.sites import SiteInfo
from tests.test_rollups import ingest_history


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("rollup", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_rolls_a_range_with_a_progress_bar(site, r):
    active = ingest_history(r, site, days=10)
    today = SiteInfo.from_model(site).today()
    out, err = run("--site", "example.com", "--from", (today - timedelta(days=9)).isoformat())
    assert "Rolled up 10 site-days for 1 site(s)." in out
    assert "rolling up" in err and "10/10" in err
    assert DailyMetrics.objects.count() == 10
    assert DailyMetrics.objects.get(date=today - timedelta(days=4)).dau == len(active[today - timedelta(days=4)])
    assert Retention.objects.filter(unit="day", cohort=today - timedelta(days=9)).exists()


def test_without_dates_it_resumes_after_the_last_final_day(site, r):
    ingest_history(r, site, days=3)
    out, _ = run()
    assert "Rolled up 1 site-days" in out  # the site was created today
    out, _ = run()
    assert "Rolled up 1 site-days" in out  # today again: it is not final yet


def test_bad_arguments(site):
    with pytest.raises(CommandError, match="no site"):
        run("--site", "nope.example")
    with pytest.raises(CommandError, match="not a date"):
        run("--from", "yesterday")
