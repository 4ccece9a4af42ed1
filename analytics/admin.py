"""Admin for sites and API keys. Keys are shown once, in a message, when made."""
from django.contrib import admin, messages

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
    readonly_fields = ("created",)
    inlines = [ApiKeyInline]
    actions = ["create_api_key"]

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
