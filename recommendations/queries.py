"""Recommendations: the site's top pages minus those a visitor has (probably) seen, and
the state of the site's Bloom filters. The filters are filled at ingest (hooks.py) and by
the seen API (api.py); here they are only checked. The dashboard reads through these."""

from dataclasses import asdict
from datetime import timedelta

import redis

from analytics.dimensions import OTHER
from analytics.queries.pages import top_pages
from analytics.sites import SiteInfo

from . import bloom


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
    config = bloom.config_of(site)
    flags = bloom.seen(r, site.id, bloom.user_digest(site.salt, user), pages, config, touch=touch)
    return [p for p, was_seen in zip(candidates, flags) if not was_seen][:limit]


def filter_stats(r: redis.Redis, site: SiteInfo) -> dict:
    """How many filters the site has, their memory against its budget (and whether it is
    full), fill and expected error."""
    config = bloom.config_of(site)
    return {**asdict(bloom.site_stats(r, site.id, config)), "target_error": config.error_rate}
