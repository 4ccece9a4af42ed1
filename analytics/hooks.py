"""Where an app beside the engine acts on what happens in it, without the engine importing
it: a few named moments, each a typed hook. The app (recommendations/: each known user's
Bloom filter of the pages they have seen) registers its hooks in its AppConfig.ready();
until then each does nothing, so the engine runs the same without the app.

An event's path, and where it meets the hooks:

    a site's row is read into the cache (sites.py)   site_loaded(site) -> the app's settings: SiteInfo.bloom
    a site's settings are validated (models.py)      site_cleaned(site) -> {field: why it is refused}
    a batch's pageviews with a user id are counted   pages_seen(pipe, r, seen) -> check(answers)
      (ingest/record.py, in the counts' round trip)
    a site's closed days are rolled up (rollups/)    closed_days_rolling(r, site)
    the key browser unlinks a site's key             key_unlinked(r, site_id, key) -> other keys unlinked?

This module imports nothing else of Tally (every part above imports it), so a site is
typed Any here: analytics.models.Site for site_cleaned and closed_days_rolling,
analytics.sites.SiteInfo for pages_seen; the app's functions name the exact types.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis

Seen = tuple[Any, str, Iterable[str]]  # (SiteInfo, the site's own user id, the pages they viewed)
CheckSeen = Callable[[list], None]  # given the answers of the commands pages_seen queued, in order


def _keep_nothing(site: Any) -> None:
    return None


def _no_problems(site: Any) -> dict[str, str]:
    return {}


def _check_nothing(answers: list) -> None:
    return None


def _queue_nothing(pipe: Any, r: redis.Redis, seen: Sequence[Seen]) -> CheckSeen:
    return _check_nothing


def _nothing_to_do(r: redis.Redis, site: Any) -> None:
    return None


def _nothing_else_unlinked(r: redis.Redis, site_id: int, key: str) -> bool:
    return False


@dataclass(frozen=True)
class Hooks:
    # What the engine's cache keeps of a site's row for the app (SiteInfo.bloom): read
    # once per CACHE_SECONDS, not per event.
    site_loaded: Callable[[Any], object] = _keep_nothing
    # Site.clean(): the app's settings on the row that it refuses, by field name.
    site_cleaned: Callable[[Any], dict[str, str]] = _no_problems
    # Queue the app's commands into ingest's pipeline, after the counts (one round trip),
    # and return what checks their answers once it has run. The check never raises: the
    # page views are counted already, and a spooled replay would meet the same error.
    pages_seen: Callable[[Any, redis.Redis, Sequence[Seen]], CheckSeen] = _queue_nothing
    # Before the pass over a site's closed days (hourly): the app's own upkeep.
    closed_days_rolling: Callable[[redis.Redis, Any], None] = _nothing_to_do
    # After the key browser unlinked one of a site's keys: the app sets its own records
    # right; True when it unlinked other keys that go with that one.
    key_unlinked: Callable[[redis.Redis, int, str], bool] = _nothing_else_unlinked


registered = Hooks()


def register(hooks: Hooks) -> None:
    """Set the engine's hooks: an app's AppConfig.ready(), once a process."""
    global registered
    registered = hooks
