"""manage.py demo: a site with history, rolled up, and plausible shapes."""

import io

import pytest
from django.core.management import call_command

from analytics.models import DailyMetrics, Retention, Site


@pytest.mark.one_leg  # (the demo's data: the same on every server)
def test_demo_makes_a_rolled_up_site(db, r):
    out = io.StringIO()
    call_command("demo", "--visitors", "40", stdout=out, stderr=io.StringIO())
    site = Site.objects.get(domain="demo.example")
    rows = DailyMetrics.objects.filter(site=site)
    assert rows.count() == 90
    assert rows.filter(final=True).count() == 89
    weekdays = [row.dau for row in rows if row.date.weekday() < 5]
    weekends = [row.dau for row in rows if row.date.weekday() >= 5]
    assert sum(weekdays) / len(weekdays) > sum(weekends) / len(weekends)  # the weekly rhythm
    assert all(row.mau >= row.wau >= row.dau for row in rows)
    assert any(sum(c.retained[1:]) for c in Retention.objects.filter(site=site, unit="week"))  # people come back
    assert "rolled up" in out.getvalue()


@pytest.mark.one_leg
def test_demo_retention_decays_smoothly_and_today_is_counted(db, r):
    """Issue 11: every week cohort fell to exactly 0 at week 8, and today's cell was 0 for
    every recent cohort. The traffic ends at the latest 20:00 of the site's clock, so the
    last day and week are never cut to a few minutes by the hour the test runs at."""
    import zoneinfo
    from datetime import datetime, time, timedelta

    from analytics import queries
    from analytics.sites import SiteInfo

    berlin = zoneinfo.ZoneInfo("Europe/Berlin")  # the demo site's zone
    local = datetime.now(berlin)
    end = datetime.combine(local.date() - timedelta(days=local.hour < 20), time(20), tzinfo=berlin)
    call_command("demo", "--visitors", "150", "--now", end.isoformat(), stdout=io.StringIO(), stderr=io.StringIO())
    info = SiteInfo.from_model(Site.objects.get(domain="demo.example"))
    today = end.date()
    weeks = queries.retention(r, info, "week", today - timedelta(weeks=12), today, 12)
    oldest = weeks[0]["retained"]
    assert len(oldest) == 13 and all(n > 0 for n in oldest)  # no cliff
    days = queries.retention(r, info, "day", today - timedelta(days=6), today - timedelta(days=2), 30)
    assert sum(c["retained"][-1] for c in days) > 0  # recent cohorts show up today
    assert Site.objects.get(domain="demo.example").pk and r.exists(
        f"tally:{{{info.id}}}:pv:{today - timedelta(days=1)}:page:/docs/getting-started"
    )
