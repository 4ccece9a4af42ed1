"""The Django admin (staff): members on the site's page, invitations and the audit log
readable. Everyone else manages members on the site's own settings pages (team/views.py)."""

from django.contrib import admin

from analytics.admin import SiteAdmin

from .models import AuditEvent, Invitation, Membership


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    fields = ("user", "role", "created", "removed")
    readonly_fields = ("created",)
    autocomplete_fields = ("user",)


SiteAdmin.inlines = [*SiteAdmin.inlines, MembershipInline]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("email", "site", "role", "created", "expires", "accepted")
    list_filter = ("role",)
    search_fields = ("email", "site__domain")
    readonly_fields = ("site", "email", "role", "invited_by", "created", "expires", "accepted", "accepted_by")

    def has_add_permission(self, request):
        return False  # (made on the members page or by manage.py invite: the link is shown once)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created", "site", "actor_name", "action", "detail")
    list_filter = ("action",)
    search_fields = ("site__domain", "actor_name", "detail")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
