"""`manage.py send_reports [--site DOMAIN] [--now] [--to EMAIL] [--frequency weekly|monthly]`:
send the reports that are due (what Celery beat does hourly), or with --now a site's
reports for their last period at once (to --to instead of their recipients, for a test)."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from analytics.models import Site
from analytics.sites import SiteInfo
from team import reports
from team.models import Report


class Command(BaseCommand):
    help = "Send the email reports that are due; --now sends a site's at once (--to: to that address only)."

    def add_arguments(self, parser):
        parser.add_argument("--site", help="only this site's reports")
        parser.add_argument("--now", action="store_true", help="send now, whatever was sent already")
        parser.add_argument("--to", help="send to this address instead of the recipients (with --now)")
        parser.add_argument("--frequency", choices=Report.Frequency.values, help="only weekly or monthly reports")

    def handle(self, site=None, now=False, to=None, frequency=None, **options):
        if not now:
            if site or to or frequency:
                raise CommandError("--site, --to and --frequency go with --now (without it: every report due)")
            self.stdout.write(f"Sent {reports.send_due()} report(s).")
            return
        if not site:
            raise CommandError("--now needs --site DOMAIN")
        found = Site.objects.filter(domain=site.strip().lower()).first()
        if found is None:
            raise CommandError(f"no site {site!r}")
        rows = found.reports.all()
        if frequency:
            rows = rows.filter(frequency=frequency)
        chosen = list(rows)
        if to and not chosen:  # (no recipient yet: a test of the weekly report to that address)
            chosen = [Report(site=found, email=to, frequency=frequency or Report.Frequency.WEEKLY)]
        today = timezone.now().astimezone(SiteInfo.from_model(found).tz).date()
        sent = 0
        for report in chosen:
            period = reports.last_period(report.frequency, today)
            sent += reports.send(report, period, to=to, test=bool(to))
            self.stdout.write(f"{report.frequency} report of {found.domain} for {period.label} to {to or report.email}")
        self.stdout.write(f"Sent {sent} report(s).")
