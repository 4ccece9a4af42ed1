"""`manage.py update_bot_data`: refresh the vendored bot data from its sources, checked before
it replaces the copy; then commit the files.

* Matomo's referrer spam list (analytics/ingest/data/referrer-spam/); `--from FILE` reads a
  downloaded spammers.txt instead of the URL.
* The data-centre ranges (lord-alfred/ipranges, analytics/ingest/data/datacenters/): the
  `_merged` files of each vendored provider file; `--datacenters DIR` reads them from a copy
  laid out like that repository (DIR/amazon/ipv4_merged.txt, ...) instead of the URLs.
* monperrus/crawler-user-agents (analytics/ingest/data/crawler-user-agents/, MIT), checked by
  crawlers.refresh() (every pattern compiles, none matches a browser of browsers.txt);
  `--crawlers FILE` reads a downloaded crawler-user-agents.json instead of the URL.

A part given a file or a directory is refreshed alone (each part given, if several are); with
none, every part is downloaded, or the one `--only` names. Nothing is written unless every file checks.
Upstream's downloaders fail silently (its Microsoft IPv6 list fell from 63 blocks to 15 for a
day in April 2026; GitHub's IPv4 list was empty for nine days in July), so a data-centre file
must be non-empty CIDR blocks of its family, as many as the vendored copy's within ±20%. Real
growth passes that in a few months (GitHub's lists grew 25% and 44% from February to August
2026): read the counts, then `--force`.
"""

import ipaddress
import re
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analytics.ingest import crawlers
from analytics.ingest.bots import SPAM_LIST
from analytics.ingest.datacenters import DATA as DATACENTERS
from analytics.ingest.datacenters import FAMILIES, PROVIDERS

SPAM_URL = "https://raw.githubusercontent.com/matomo-org/referrer-spam-list/master/spammers.txt"
HOST = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$")
MIN_HOSTS = 500  # (a list much shorter than the one we have is a broken download, not an update)

CRAWLERS_URL = "https://raw.githubusercontent.com/monperrus/crawler-user-agents/master/crawler-user-agents.json"
RANGES_URL = "https://raw.githubusercontent.com/lord-alfred/ipranges/main/{provider}/{file}_merged.txt"
PARTS = ("spam", "datacenters", "crawlers")
MAX_CHANGE = 0.2  # a data-centre file whose count of blocks moves this much is refused (without --force)


class Command(BaseCommand):
    help = "Refresh the vendored referrer spam list, data-centre ranges and crawler list from their sources."

    def add_arguments(self, parser):
        parser.add_argument("--only", choices=PARTS, help="refresh this part alone")
        parser.add_argument("--from", dest="source", help="a downloaded spammers.txt instead of the URL")
        parser.add_argument("--datacenters", metavar="DIR", help="a copy of lord-alfred/ipranges instead of the URLs")
        parser.add_argument(
            "--crawlers",
            dest="crawlers_file",
            metavar="FILE",
            help="a downloaded crawler-user-agents.json, not the URL",
        )
        parser.add_argument(
            "--force", action="store_true", help="accept data-centre files whose counts moved 20%% or more"
        )

    def handle(self, only=None, source=None, datacenters=None, crawlers_file=None, force=False, **options):
        sources = (("spam", source), ("datacenters", datacenters), ("crawlers", crawlers_file))
        given = {part for part, where in sources if where}
        if only and given - {only}:
            raise CommandError(f"--only {only}, but a source for another part was given")
        parts = {only} if only else given or set(PARTS)
        hosts = _spam_hosts(source or SPAM_URL) if "spam" in parts else None
        ranges = _ranges(datacenters, force) if "datacenters" in parts else None
        if "crawlers" in parts:  # (checked and written in one step, before the others are written)
            try:
                self.stdout.write(crawlers.refresh(_read(crawlers_file or CRAWLERS_URL)))
            except ValueError as error:
                raise CommandError(f"crawler list refused, nothing written: {error}") from None
            _dated(crawlers.LIST.parent)

        if hosts is not None:  # (written only once every part has checked)
            before = set(SPAM_LIST.read_text(encoding="utf-8").split())
            SPAM_LIST.write_text("\n".join(hosts) + "\n", encoding="utf-8")
            added, removed = len(set(hosts) - before), len(before - set(hosts))
            self.stdout.write(f"{SPAM_LIST.name}: {len(hosts)} hosts ({added} new, {removed} gone); commit it")
            _dated(SPAM_LIST.parent)
        if ranges is not None:
            for target, (blocks, was) in ranges.items():
                target.write_text("\n".join(blocks) + "\n", encoding="utf-8")
                self.stdout.write(f"{target.relative_to(DATACENTERS)}: {len(blocks):,} blocks (were {was:,})")
            _dated(DATACENTERS)
            self.stdout.write(f"{DATACENTERS.name}: {len(ranges)} files refreshed; commit them")


def _dated(folder: Path):
    """The list in `folder` was taken today (its VERSION: what the settings page and the admin show)."""
    (folder / "VERSION").write_text(datetime.now(UTC).date().isoformat() + "\n", encoding="utf-8")


def _spam_hosts(where: str) -> list[str]:
    hosts = sorted({line.strip().lower() for line in _read(where).splitlines() if line.strip()})
    bad = [host for host in hosts if not HOST.match(host)]
    if bad or len(hosts) < MIN_HOSTS:
        raise CommandError(f"not a referrer spam list: {len(hosts)} hosts, {len(bad)} malformed (e.g. {bad[:3]})")
    return hosts


def _ranges(directory: str | None, force: bool) -> dict[Path, tuple[list[str], int]]:
    """The new blocks of every vendored data-centre file, with the count they replace, all
    checked: the files refreshed are the ones vendored (Oracle publishes no IPv6)."""
    found, problems = {}, []
    for provider in PROVIDERS:
        for file in FAMILIES:
            target = DATACENTERS / provider / f"{file}.txt"
            if not target.exists():
                continue
            if directory:
                text = _read(str(Path(directory) / provider / f"{file}_merged.txt"))
            else:
                text = _read(RANGES_URL.format(provider=provider, file=file))
            blocks = [line.strip() for line in text.splitlines() if line.strip()]
            before = len(target.read_text(encoding="utf-8").split())
            name = f"{provider}/{file}"
            bad = [block for block in blocks if not _is_block(block, file)]
            if not bad:  # (Vultr's feed lists the documentation ranges, 192.0.2.0/24...: no one's data centre)
                blocks = [block for block in blocks if ipaddress.ip_network(block).is_global]
            if bad:
                problems.append(f"{name}: {len(bad)} lines are not {file} CIDR blocks (e.g. {bad[:3]})")
            elif not blocks:
                problems.append(f"{name}: empty")
            elif abs(len(blocks) - before) >= MAX_CHANGE * before and not force:
                problems.append(f"{name}: {len(blocks):,} blocks against {before:,} vendored (--force if that is real)")
            found[target] = (blocks, before)
    if problems:
        raise CommandError("data-centre ranges refused, nothing written: " + "; ".join(problems))
    return found


def _is_block(line: str, file: str) -> bool:
    try:
        return f"ipv{ipaddress.ip_network(line).version}" == file
    except ValueError:  # (so is a block with host bits set: a merged list has none)
        return False


def _read(where: str) -> str:
    """A file's text or a URL's: one that cannot be read is the command's error, not a traceback."""
    try:
        if where.startswith("https://"):
            with urllib.request.urlopen(where, timeout=30) as answer:  # noqa: S310 (our fixed https URLs)
                return answer.read().decode("utf-8")
        return Path(where).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"{where}: {error}") from error
