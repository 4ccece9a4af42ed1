"""Is this User-Agent a bot? Asked of crawlerdetect, its maintained list of crawler patterns.

crawlerdetect matches one very large regular expression (about 0.25 ms a call here), while
real traffic repeats a few thousand User-Agents, so answers are cached per process.
"""

from functools import lru_cache

from crawlerdetect import CrawlerDetect

_detector = CrawlerDetect()


MAX_AGENT = 1024  # characters judged (and cached): 20,000 cached 8 KB headers would pin 160 MB


def is_bot(user_agent: str) -> bool:
    return _is_bot(user_agent[:MAX_AGENT])


@lru_cache(maxsize=20_000)
def _is_bot(user_agent: str) -> bool:
    if not user_agent:
        return True
    return bool(_detector.isCrawler(user_agent))
