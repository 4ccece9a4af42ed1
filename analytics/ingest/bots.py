"""Is this User-Agent a bot? Asked of crawlerdetect, its maintained list of crawler patterns,
and of monperrus/crawler-user-agents (crawlers.py), which names some bots crawlerdetect does
not (AI assistants, scanners, monitors). Is this referrer spam? Asked of Matomo's list
(data/referrer-spam/).

crawlerdetect matches one very large regular expression (about 0.25 ms a call here), while
real traffic repeats a few thousand User-Agents, so answers are cached per process.
"""

from functools import lru_cache
from pathlib import Path

from crawlerdetect import CrawlerDetect

from .. import sources
from . import crawlers

_detector = CrawlerDetect()


MAX_AGENT = 1024  # characters judged (and cached): 20,000 cached 8 KB headers would pin 160 MB


def is_bot(user_agent: str) -> bool:
    return _is_bot(user_agent[:MAX_AGENT])


@lru_cache(maxsize=20_000)
def _is_bot(user_agent: str) -> bool:
    if not user_agent:
        return True
    return crawlers.listed(user_agent) or bool(_detector.isCrawler(user_agent))  # (the cheaper first)


SPAM_LIST = Path(__file__).resolve().parent / "data" / "referrer-spam" / "spammers.txt"


@lru_cache(maxsize=1)
def _spammers() -> frozenset[str]:
    """Matomo's referrer spam hosts (data/referrer-spam/: public domain), read once."""
    lines = SPAM_LIST.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip().lower() for line in lines if line.strip() and not line.startswith("#"))


def referrer_spam(referrer: str | None) -> bool:
    """Is the referrer's host, or a domain above it, a known referrer spammer?"""
    host = sources.referrer_host(referrer)  # (the regex acquisition() reads it with, per event)
    if not host:
        return False
    spammers = _spammers()
    parts = host.split(".")
    return any(".".join(parts[n:]) in spammers for n in range(len(parts) - 1))


DATA = Path(__file__).resolve().parent / "data"
LISTS = {  # the vendored lists, by what they catch: data/<folder>/VERSION holds the day each was taken
    "crawler User-Agents (crawler-user-agents)": "crawler-user-agents",
    "data-centre ranges (lord-alfred/ipranges)": "datacenters",
    "referrer spam (Matomo)": "referrer-spam",
}


def data_dates() -> dict[str, str]:
    """{list: the day its vendored copy was taken from upstream}, for the settings page and
    the admin: an owner sees how fresh the filters are (`manage.py update_bot_data`)."""
    return {name: (DATA / folder / "VERSION").read_text(encoding="utf-8").strip() for name, folder in LISTS.items()}
