"""manage.py demo: a site with history, rolled up, and plausible shapes."""
import io

from django.core.management import call_command

from analytics.models import DailyMetrics, Retention, Site


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
