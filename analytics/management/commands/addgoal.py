"""python manage.py addgoal DOMAIN (--event NAME | --page PATTERN) [--name NAME]"""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from analytics.models import Goal, Site


class Command(BaseCommand):
    help = "Add a goal to a site: a custom event by name, or pageviews of a path pattern (/blog/*, /docs/**)."

    def add_arguments(self, parser):
        parser.add_argument("domain")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--event", help="a custom event's name, e.g. Signup")
        which.add_argument("--page", help="a path pattern: * within a segment, ** across segments")
        parser.add_argument(
            "--name", default="", help="the goal's name on the dashboard (default: the event or pattern)"
        )

    def handle(self, domain, event, page, name, **options):
        site = Site.objects.filter(domain=domain.strip().lower()).first()
        if site is None:
            raise CommandError(f"no site {domain!r}: add it with `manage.py addsite {domain}` first")
        goal = Goal(site=site, name=name, event_name=event or "", page_pattern=page or "")
        try:
            goal.full_clean()
        except ValidationError as e:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in e.message_dict.items())) from None
        goal.save()
        what = f"custom event {goal.event_name!r}" if goal.event_name else f"pageviews of {goal.page_pattern}"
        self.stdout.write(f"Added goal {goal.name!r} to {site.domain}: {what}.")
