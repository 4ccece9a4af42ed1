"""What the Bloom filters do at the engine's hooks (analytics/hooks.py), in the order an
event meets them; apps.py registers HOOKS."""

from collections.abc import Sequence

import redis

from analytics import hooks
from analytics.models import Site
from analytics.store import keys

from . import bloom


def site_loaded(site: Site) -> bloom.BloomConfig:
    """The site's filter settings, kept by the engine's cache as SiteInfo.bloom."""
    return bloom.BloomConfig.for_site(site)


def site_cleaned(site: Site) -> dict[str, str]:
    """Bloom settings whose first sub-filter passes the size limit would make one API call
    allocate that much per user (bloom.MAX_FILTER_BYTES says why the limit)."""
    if not (site.bloom_capacity and site.bloom_error_rate and 0 < site.bloom_error_rate < 1):
        return {}  # (the fields' own checks say it)
    problem = bloom.size_problem(bloom.BloomConfig(site.bloom_capacity, site.bloom_error_rate))
    return {"bloom_capacity": problem[0].upper() + problem[1:] + "."} if problem else {}


def pages_seen(pipe, r: redis.Redis, seen: Sequence[hooks.Seen]) -> hooks.CheckSeen:
    """Mark the pages each user viewed in their filter: one add a user, in ingest's pipeline
    beside the counts; the check redoes an add whose script the server did not know and
    logs what the budget says (bloom.check_queued)."""
    queued = [
        add
        for site, user, pages in seen
        if (
            add := bloom.queue_add(
                pipe, r, site.id, bloom.user_digest(site.salt, user), list(pages), bloom.config_of(site), site.domain
            )
        )
    ]
    return lambda answers: bloom.check_queued(r, answers, queued)


def closed_days_rolling(r: redis.Redis, site: Site) -> None:
    """Filters made before the Bloom budget's books existed go on them, once per site (a
    marker keeps it from scanning again): an upgrade needs no manual step."""
    if not r.exists(keys.bloom_recounted(site.pk)):
        bloom.recount(r, site.pk, bloom.BloomConfig.for_site(site))
        r.set(keys.bloom_recounted(site.pk), 1)


def key_unlinked(r: redis.Redis, site_id: int, key: str) -> bool:
    """The books of the site's Bloom budget follow the key browser: a filter's key unlinked
    takes it off them (bloom.sync), and one of the books unlinked takes the other two with
    it (they are one record: the filters go back on them when next touched, or with
    `manage.py recount_bloom`). True when it unlinked others of the books."""
    books = keys.bloom_registry(site_id)
    if key in books:
        return bool(r.unlink(*(book for book in books if book != key)))
    digest = keys.bloom_digest(site_id, key)
    if digest is not None:
        bloom.sync(r, site_id, digest)
    return False


HOOKS = hooks.Hooks(
    site_loaded=site_loaded,
    site_cleaned=site_cleaned,
    pages_seen=pages_seen,
    closed_days_rolling=closed_days_rolling,
    key_unlinked=key_unlinked,
)
