"""Admin for sites and API keys. Keys are shown once, in a message, when made."""
import redis
from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from .models import ApiKey, Site


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    fields = ("name", "prefix", "created", "last_used")
    readonly_fields = ("prefix", "created", "last_used")
    can_delete = True

    def has_add_permission(self, request, obj=None):
        return False  # keys are made by the action below, so their clear text can be shown once


def _show_key(request, site, key):
    messages.warning(
        request,
        f"New API key for {site.domain}: {key} — copy it now; it is stored hashed and will not be shown again.",
    )


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ("domain", "timezone", "identity_mode", "created")
    search_fields = ("domain",)
    readonly_fields = ("created", "memory_today", "share_link", "bloom_memory")
    inlines = [ApiKeyInline]
    actions = ["create_api_key", "enable_sharing", "revoke_sharing"]
    filter_horizontal = ("owners",)
    fieldsets = [
        (None, {"fields": ("domain", "timezone", "identity_mode", "created", "owners")}),
        ("Public share link", {"fields": ("share_link",), "description": "Use the actions on the site list to create or revoke it."}),
        (
            "Limits",
            {
                "fields": ("ingest_rate_per_minute", "max_pages_per_day", "max_event_names_per_day", "max_property_values"),
                "description": "Over the rate limit, ingestion answers 429 with Retry-After (each client IP has its own "
                "limit too: RATE_LIMIT_PER_IP). Past a daily quota, events still count in the site's totals, under "
                "(other): one site, or one attacker, cannot fill Redis with new names.",
            },
        ),
        (
            "Recommendation dedup (Bloom filters)",
            {
                "fields": ("bloom_capacity", "bloom_error_rate", "bloom_expansion", "bloom_nonscaling", "bloom_idle_days", "bloom_memory"),
                "description": "Each visitor with a user id gets a scalable Bloom filter of the pages and items they have seen. "
                "New settings apply to filters made from now on.",
            },
        ),
        (
            "Key expiry policy",
            {
                "fields": ("keep_realtime_hours", "keep_page_days", "keep_daily_days", "memory_today"),
                "description": "Raw Redis keys expire after these times, and only once their day is rolled up; "
                "the rolled-up numbers are kept for good.",
            },
        ),
    ]

    @admin.display(description="Memory a filter needs")
    def bloom_memory(self, obj):
        from .dedup.bloom import BloomConfig, shape

        config = BloomConfig.for_site(obj)
        first = shape(config, 0)
        grown = sum(shape(config, j)[1] for j in range(3))
        items = config.capacity * sum(config.expansion**j for j in range(3))
        return (
            f"{_size(first[1] // 8)} for the first {config.capacity:,} items ({first[1] / config.capacity:.1f} bits and "
            f"{first[2]} hash functions per item); {_size(grown // 8)} once scaled to {items:,} items"
            + (" (not scaling: it refuses more)" if config.nonscaling else "")
        )

    @admin.display(description="Share link")
    def share_link(self, obj):
        if not obj.share_token:
            return "Not shared."
        from django.urls import reverse

        url = reverse("dashboard:shared", args=[obj.share_token])
        return format_html('<a href="{}">{}</a>', url, url)

    @admin.action(description="Create (or replace) a public read-only share link")
    def enable_sharing(self, request, queryset):
        from django.urls import reverse

        for site in queryset:
            url = request.build_absolute_uri(reverse("dashboard:shared", args=[site.enable_sharing()]))
            messages.success(request, f"Share link for {site.domain}: {url}")

    @admin.action(description="Revoke the share link")
    def revoke_sharing(self, request, queryset):
        for site in queryset:
            site.revoke_sharing()
        messages.success(request, f"Revoked the share links of {queryset.count()} site(s).")

    @admin.display(description="Redis memory of today's keys")
    def memory_today(self, obj):
        if obj.pk is None:
            return "—"
        from .keyspace import memory_today
        from .sites import SiteInfo
        from .store.connection import get_redis

        try:
            usage = memory_today(get_redis(), SiteInfo.from_model(obj))
        except redis.exceptions.RedisError as e:
            return f"Redis unavailable ({e.__class__.__name__})"
        rows = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", ((name, n, _size(b)) for name, (n, b) in usage.items())
        )
        return format_html("<table><tr><th>family</th><th>keys</th><th>memory</th></tr>{}</table>", rows)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if not change:
            _show_key(request, obj, obj.create_api_key("created with the site"))

    @admin.action(description="Create a new API key for the selected sites")
    def create_api_key(self, request, queryset):
        for site in queryset:
            _show_key(request, site, site.create_api_key())


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "site", "name", "created", "last_used")
    list_filter = ("site",)
    readonly_fields = ("site", "prefix", "created", "last_used")
    fields = ("site", "name", "prefix", "created", "last_used")

    def has_add_permission(self, request):
        return False


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
