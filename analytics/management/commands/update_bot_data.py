"""`manage.py update_bot_data [--from FILE]`: refresh the vendored bot data (today: Matomo's
referrer spam list, analytics/ingest/data/referrer-spam/) from its source, checked before it
replaces the copy; then commit the file. `--from` reads a downloaded copy instead."""

import re
import urllib.request
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analytics.ingest.bots import SPAM_LIST

SPAM_URL = "https://raw.githubusercontent.com/matomo-org/referrer-spam-list/master/spammers.txt"
HOST = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$")
MIN_HOSTS = 500  # (a list much shorter than the one we have is a broken download, not an update)


class Command(BaseCommand):
    help = "Refresh the vendored referrer spam list (Matomo's, public domain) from its source."

    def add_arguments(self, parser):
        parser.add_argument("--from", dest="source", help="a downloaded spammers.txt instead of the URL")

    def handle(self, source=None, **options):
        if source:
            text = Path(source).read_text(encoding="utf-8")
        else:
            with urllib.request.urlopen(SPAM_URL, timeout=30) as answer:  # noqa: S310 (a fixed https URL)
                text = answer.read().decode("utf-8")
        hosts = sorted({line.strip().lower() for line in text.splitlines() if line.strip()})
        bad = [host for host in hosts if not HOST.match(host)]
        if bad or len(hosts) < MIN_HOSTS:
            raise CommandError(f"not a referrer spam list: {len(hosts)} hosts, {len(bad)} malformed (e.g. {bad[:3]})")
        before = set(SPAM_LIST.read_text(encoding="utf-8").split())
        SPAM_LIST.write_text("\n".join(hosts) + "\n", encoding="utf-8")
        added, removed = len(set(hosts) - before), len(before - set(hosts))
        self.stdout.write(f"{SPAM_LIST.name}: {len(hosts)} hosts ({added} new, {removed} gone); commit it")
