"""The Bloom filters on the admin's site page: the engine's SiteAdmin with a fieldset of
their settings (fields of analytics.models.Site), the memory a filter needs, and the
filters now against the site's budget. Registered in place of the engine's (analytics.admin
is imported, so registered, first)."""

import redis
from django.contrib import admin
from django.utils.html import format_html

from analytics.admin import SiteAdmin, size_text
from analytics.models import Site
from analytics.store.connection import get_redis

from .bloom import MAX_FILTER_BITS, MAX_FILTER_BYTES, BloomConfig, shape, site_stats, size_problem

BLOOM_SETTINGS = (
    "Advanced: Recommendation dedup (Bloom filters)",
    {
        "classes": ["collapse"],
        "fields": (
            "bloom_capacity",
            "bloom_error_rate",
            "bloom_expansion",
            "bloom_nonscaling",
            "bloom_idle_days",
            "bloom_memory",
            "bloom_max_memory_mb",
            "bloom_usage",
        ),
        "description": "Each visitor with a user id gets a scalable Bloom filter of the pages and items they "
        "have seen. New settings apply to filters made from now on. A filter is at most 16 MB, all its "
        "sub-filters together: settings whose first sub-filter alone is larger are refused, and a filter at "
        "the limit stops growing. The site's filters together are held to the memory budget (each charged its "
        "bits and about 640 bytes of keys and bookkeeping): at the budget, visitors without a filter get none "
        "(nothing seen: their recommendations are the plain top pages), full filters stop growing, and page "
        "views are counted all the same, until filters expire or the budget is raised; nothing is evicted. A "
        "lower budget applies to new filters and growth only.",
    },
)


def _after(title: str, fieldsets: list, fieldset: tuple) -> list:
    """`fieldset` placed right after the one named `title` (the advanced ones follow the limits)."""
    at = next(i for i, (name, _) in enumerate(fieldsets) if name == title) + 1
    return [*fieldsets[:at], fieldset, *fieldsets[at:]]


admin.site.unregister(Site)


@admin.register(Site)
class BloomSiteAdmin(SiteAdmin):
    fieldsets = _after("Limits", list(SiteAdmin.fieldsets), BLOOM_SETTINGS)

    def get_readonly_fields(self, request, obj=None):
        return (*super().get_readonly_fields(request, obj), "bloom_memory", "bloom_usage")

    @admin.display(description="Memory a filter needs")
    def bloom_memory(self, obj):
        config = BloomConfig.for_site(obj)
        problem = size_problem(config)
        if problem:  # (saved before the model checked it: no filter is made with these settings)
            return problem[0].upper() + problem[1:] + "."
        first = shape(config, 0)
        grown = sum(shape(config, j)[1] for j in range(3))
        items = config.capacity * sum(config.expansion**j for j in range(3))
        scaled = (
            f"{size_text(grown // 8)} once scaled to {items:,} items"
            if grown <= MAX_FILTER_BITS
            else f"it stops growing at the limit of {size_text(MAX_FILTER_BYTES)} a filter"
        )
        return (
            f"{size_text(first[1] // 8)} for the first {config.capacity:,} items ({first[1] / config.capacity:.1f} "
            f"bits and {first[2]} hash functions per item); "
            + ("not scaling: it refuses more" if config.nonscaling else scaled)
        )

    @admin.display(description="Filters now")
    def bloom_usage(self, obj):
        if obj.pk is None:
            return "—"
        config = BloomConfig.for_site(obj)
        try:
            stats = site_stats(get_redis(), obj.pk, config, max_filters=0)
        except redis.exceptions.RedisError as e:
            return f"Redis unavailable ({e.__class__.__name__})"
        share = stats.memory_bytes / config.budget_bytes
        usage = (
            f"{stats.filters:,} filters, {size_text(stats.memory_bytes)} of the {size_text(config.budget_bytes)} "
            f"budget ({share:.0%})"
        )
        if stats.full_since is None:
            return usage
        return format_html(
            "{}. <strong>At the budget since {}</strong>: {} adds refused (visitors without a filter get none, full "
            "filters do not grow) until the filters are back under 90% of it.",
            usage,
            stats.full_since.replace("T", " ").replace("+00:00", " UTC"),
            f"{stats.refused:,}",
        )
