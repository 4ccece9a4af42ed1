"""Recommendations: the site's top pages minus those a visitor has (probably) seen, and
the state of the site's Bloom filters. The filters are filled at ingest and by the seen
API (analytics.dedup); here they are only checked."""

from dataclasses import asdict
from datetime import timedelta

import redis

from ..dedup import bloom
from ..dimensions import OTHER
from ..sites import SiteInfo
from .pages import top_pages


def unseen_top_pages(
    r: redis.Redis, site: SiteInfo, user: str, limit: int, days: int, touch: bool = True
) -> list[dict]:
    """The site's top pages of the last `days` days minus those the user has seen. With
    `touch`, the check counts as the visitor's activity for the filter's idle expiry (the
    API); the dashboard only looks."""
    end = site.today()
    candidates = top_pages(r, site, end - timedelta(days=days - 1), end, limit=min(4 * limit + 20, 200))
    candidates = [
        p for p in candidates if p["page"] != OTHER
    ]  # (the pages past a day's quota, together: no page to visit)
    pages = [p["page"] for p in candidates]
    flags = bloom.seen(r, site.id, bloom.user_digest(site.salt, user), pages, site.bloom, touch=touch)
    return [p for p, was_seen in zip(candidates, flags) if not was_seen][:limit]


def filter_stats(r: redis.Redis, site: SiteInfo) -> dict:
    """How many filters the site has, their memory against its budget (and whether it is
    full), fill and expected error."""
    return {**asdict(bloom.site_stats(r, site.id, site.bloom)), "target_error": site.bloom.error_rate}
