"""Is this User-Agent a bot? Asked of crawlerdetect, its maintained list of crawler patterns.
Is this referrer spam? Asked of Matomo's list (data/referrer-spam/).

crawlerdetect matches one very large regular expression (about 0.25 ms a call here), while
real traffic repeats a few thousand User-Agents, so answers are cached per process.
"""

from functools import lru_cache
from pathlib import Path

from crawlerdetect import CrawlerDetect

from .. import sources

_detector = CrawlerDetect()


MAX_AGENT = 1024  # characters judged (and cached): 20,000 cached 8 KB headers would pin 160 MB


def is_bot(user_agent: str) -> bool:
    return _is_bot(user_agent[:MAX_AGENT])


@lru_cache(maxsize=20_000)
def _is_bot(user_agent: str) -> bool:
    if not user_agent:
        return True
    return bool(_detector.isCrawler(user_agent))


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
