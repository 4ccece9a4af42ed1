"""Admin for sites and API keys, the place a site owner starts from.

A new key is shown once, on the page that answers the POST that made it: the clear text is
never stored (not in the session, not in a message), and the page is never cached.

A site's "Redis keys" page browses its keys (analytics.keybrowser): SCAN pages, a big-key
report, UNLINK of one key or of all, each a POST behind a confirmation page.

A site's "Imports" page takes another product's files (analytics.imports.run.KINDS) as an
upload that a Celery worker imports (an ImportJob, analytics.tasks.run_import), lists the
jobs and the imports, and takes a Plausible import out again (replayed ones cannot be).

An app beside the engine shows its own settings of a site by extending SiteAdmin in its
admin.py (recommendations/: the Bloom filters' fieldset).
"""

import functools
import logging
import zoneinfo
from http.cookies import CookieError, SimpleCookie
from importlib import import_module
from pathlib import Path
from urllib.parse import urlencode

import redis
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user
from django.core.exceptions import PermissionDenied
from django.core.files.move import file_move_safe
from django.core.files.uploadedfile import UploadedFile
from django.db import models
from django.http import Http404, HttpRequest
from django.shortcuts import redirect, render
from django.urls import Resolver404, path, resolve, reverse
from django.utils.cache import add_never_cache_headers
from django.utils.html import format_html, format_html_join
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST
from kombu.exceptions import OperationalError

from . import tasks
from .imports import plausible, run
from .ingest.bots import data_dates
from .models import Annotation, ApiKey, Funnel, Goal, ImportJob, Site
from .sites import tracking_snippet

log = logging.getLogger(__name__)

admin.site.site_header = admin.site.site_title = "Tally admin"


class GoalInline(admin.TabularInline):
    model = Goal
    extra = 0
    fields = ("name", "event_name", "page_pattern", "created")
    readonly_fields = ("created",)


class FunnelInline(admin.TabularInline):
    model = Funnel
    extra = 0
    fields = ("name", "steps", "created")
    readonly_fields = ("created",)
    formfield_overrides = {models.TextField: {"widget": forms.Textarea(attrs={"rows": 4, "cols": 50})}}


class AnnotationInline(admin.TabularInline):
    """Notes on the site's timeline, drawn on the dashboard's chart (added there too)."""

    model = Annotation
    extra = 0
    fields = ("date", "end", "text", "public", "author", "created")
    readonly_fields = ("author", "created")


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    fields = ("name", "prefix", "created", "last_used")
    readonly_fields = ("prefix", "created", "last_used")
    can_delete = True

    def has_add_permission(self, request, obj=None):
        return False  # keys are made by the buttons and the action below, so their clear text can be shown once


@functools.cache
def _timezones():
    return sorted(zoneinfo.available_timezones())  # (reads the tz database from disk: once)


class TimezoneInput(forms.TextInput):
    """A text box with every IANA zone in a <datalist>: browsers filter the ~600 names as one
    types, with no JavaScript of ours. The model's validator still refuses unknown zones."""

    def render(self, name, value, attrs=None, renderer=None):
        list_id = f"{(attrs or {}).get('id', name)}_zones"
        box = super().render(name, value, {**(attrs or {}), "list": list_id, "autocomplete": "off"}, renderer)
        options = format_html_join("", '<option value="{}">', ((zone,) for zone in _timezones()))
        return box + format_html('<datalist id="{}">{}</datalist>', list_id, options)


class SiteForm(forms.ModelForm):
    class Meta:
        model = Site
        fields = "__all__"
        widgets = {"timezone": TimezoneInput(attrs={"class": "vTextField"})}


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    form = SiteForm
    list_display = ("domain", "timezone", "identity_mode", "created")
    search_fields = ("domain",)
    readonly_fields = ("created", "memory_today", "share_link", "bot_data")
    inlines = [GoalInline, FunnelInline, AnnotationInline, ApiKeyInline]
    actions = ["create_api_key", "enable_sharing", "revoke_sharing"]
    fieldsets = [
        (None, {"fields": ("domain", "timezone", "identity_mode", "created")}),
        (
            "Public share link",
            {
                "fields": ("share_link",),
                "description": "Use the buttons at the top of this page to create, replace or revoke it.",
            },
        ),
        (
            "Limits",
            {
                "fields": (
                    "ingest_rate_per_minute",
                    "max_pages_per_day",
                    "max_event_names_per_day",
                    "max_property_values",
                    "max_property_names",
                    "max_property_groups",
                    "segment_values",
                ),
                "description": "Over the rate limit, ingestion answers 429 with Retry-After (each client IP has its "
                "own limit too: RATE_LIMIT_PER_IP). Past a daily quota, events still count in the site's totals, under "
                "(other): one site, or one attacker, cannot fill Redis with new names.",
            },
        ),
        (
            "Bot filters",
            {
                "fields": ("drop_crawlers", "drop_datacenters", "drop_referrer_spam", "pattern_pageviews", "bot_data"),
                "description": "Events these drop are counted by reason (GET /api/v1/stats/dropped, the dashboard's "
                "'Not counted' line); the site's own exclusions are on its settings' Exclusions page.",
            },
        ),
        (
            "Advanced: Key expiry policy",
            {
                "classes": ["collapse"],
                "fields": (
                    "keep_realtime_minutes",
                    "keep_page_days",
                    "keep_page_period_days",
                    "keep_daily_days",
                    "keep_segment_days",
                    "memory_today",
                ),
                "description": "Raw Redis keys expire after these times, and only once their day is rolled up; "
                "the rolled-up numbers are kept for good.",
            },
        ),
    ]

    @admin.display(description="Lists of")
    def bot_data(self, obj):
        """The day each vendored list was taken from upstream (`manage.py update_bot_data`)."""
        return "; ".join(f"{name}: {day}" for name, day in data_dates().items())

    @admin.display(description="Share link")
    def share_link(self, obj):
        if not obj.share_token:
            return "Not shared."
        url = reverse("dashboard:shared", args=[obj.share_token])
        return format_html('<a href="{}">{}</a>', url, url)

    def get_urls(self):
        """The change page's buttons: POST only; admin_view adds the staff check and CSRF."""
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/api-key/", view(require_POST(self.api_key_view)), name="analytics_site_api_key"),
            path("<path:object_id>/share/", view(require_POST(self.share_view)), name="analytics_site_share"),
            path("<path:object_id>/unshare/", view(require_POST(self.unshare_view)), name="analytics_site_unshare"),
            path("<path:object_id>/keys/", view(self.keys_view), name="analytics_site_keys"),
            path("<path:object_id>/keys/unlink/", view(self.unlink_key_view), name="analytics_site_unlink_key"),
            path("<path:object_id>/keys/purge/", view(self.purge_keys_view), name="analytics_site_purge_keys"),
            path("<path:object_id>/imports/", view(self.imports_view), name="analytics_site_imports"),
            path(  # (csrf_exempt: the view checks the token itself, once the upload's size is known)
                "<path:object_id>/imports/upload/",
                view(csrf_exempt(require_POST(self.upload_view))),
                name="analytics_site_import_upload",
            ),
            path(
                "<path:object_id>/imports/<int:log_id>/remove/",
                view(self.remove_import_view),
                name="analytics_site_remove_import",
            ),
        ] + super().get_urls()

    def _site_to_change(self, request, object_id):
        site = self.get_object(request, unquote(object_id))
        if site is None:
            raise Http404("no such site")
        if not self.has_change_permission(request, site):
            raise PermissionDenied
        return site

    def api_key_view(self, request, object_id):
        site = self._site_to_change(request, object_id)
        return self._key_page(request, [(site, site.create_api_key())])

    def share_view(self, request, object_id):
        site = self._site_to_change(request, object_id)
        url = request.build_absolute_uri(reverse("dashboard:shared", args=[site.enable_sharing()]))
        self.message_user(request, f"Share link for {site.domain}: {url}", messages.SUCCESS)
        return redirect("admin:analytics_site_change", site.pk)

    def unshare_view(self, request, object_id):
        site = self._site_to_change(request, object_id)
        site.revoke_sharing()
        self.message_user(request, f"Revoked the share link of {site.domain}.", messages.SUCCESS)
        return redirect("admin:analytics_site_change", site.pk)

    # The key browser (analytics.keybrowser): GET pages only read; UNLINK and purge are
    # POSTs (CSRF checked by admin_view) answered to a confirmation page shown by GET first.

    def _keys_context(self, request, site, title):
        return {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": site,
            "site": site,
            "title": title,
        }

    def keys_view(self, request, object_id):
        from .keybrowser import MAX_CURSOR, big_keys, browse, scan_cursor
        from .store.connection import get_redis

        site = self._site_to_change(request, object_id)
        pattern = request.GET.get("pattern", "*")[:200] or "*"
        cursor = scan_cursor(request.GET.get("cursor") or "0")
        if cursor is None:  # (a hand-edited URL: the first page, and why)
            self.message_user(
                request,
                f"Not a SCAN cursor (a whole number from 0 to {MAX_CURSOR}): started from the first page.",
                messages.WARNING,
            )
            cursor = 0
        r = get_redis()
        next_cursor, rows = browse(r, site.pk, pattern, cursor)
        for row in rows:
            row["size"] = size_text(row["bytes"]) if row["bytes"] is not None else "?"
        context = {
            **self._keys_context(request, site, f"Redis keys of {site.domain}"),
            "pattern": pattern,
            "cursor": cursor,
            "next_cursor": next_cursor,
            "rows": rows,
            "big_keys": [(kind, [(key, size_text(n)) for key, n in top]) for kind, top in big_keys(r, site.pk).items()]
            if request.GET.get("report")
            else None,
        }
        return render(request, "admin/analytics/site/keys.html", context)

    def unlink_key_view(self, request, object_id):
        from .keybrowser import belongs, unlink
        from .store.connection import get_redis

        site = self._site_to_change(request, object_id)
        data = request.POST if request.method == "POST" else request.GET
        key, pattern = data.get("key", ""), data.get("pattern", "*")
        if not belongs(site.pk, key):
            raise Http404("not a key of this site")
        if request.method == "POST":
            gone = unlink(get_redis(), site.pk, key)
            self.message_user(request, f"Unlinked {key}." if gone else f"{key} was already gone.", messages.SUCCESS)
            return redirect(f"{reverse('admin:analytics_site_keys', args=[site.pk])}?{urlencode({'pattern': pattern})}")
        context = {**self._keys_context(request, site, "Unlink a Redis key"), "key": key, "pattern": pattern}
        return render(request, "admin/analytics/site/keys_confirm.html", context)

    def purge_keys_view(self, request, object_id):
        from .keybrowser import purge
        from .store.connection import get_redis

        site = self._site_to_change(request, object_id)
        context = self._keys_context(request, site, f"Purge the Redis keys of {site.domain}")
        if request.method == "POST":
            context["deleted"] = purge(get_redis(), site.pk)
        else:
            context["purge"] = True
        return render(request, "admin/analytics/site/keys_confirm.html", context)

    # Imports: the page (GET), the upload (a POST answered with a redirect to the page, the
    # import itself left to a Celery worker), and the removal of a Plausible import (POST,
    # answered to a confirmation page shown by GET first).

    def imports_view(self, request, object_id):
        return self._imports_page(request, self._site_to_change(request, object_id))

    def _imports_page(self, request, site, error="", status=200, chosen=""):
        jobs = list(site.import_jobs.select_related("user")[:JOBS_SHOWN])
        context = {
            **self._keys_context(request, site, f"Imports of {site.domain}"),
            "kinds": [(kind, *KIND_HELP.get(kind, (kind, ""))) for kind in run.KINDS],
            "chosen": chosen,
            "jobs": jobs,
            "refresh": any(job.active for job in jobs),
            "imports": site.imported_logs.order_by("-created", "-pk"),
            "removable": plausible.KIND,
            "error": error,
            "max_upload": size_text(upload_limit()),
        }
        return render(request, "admin/analytics/site/imports.html", context, status=status)

    def upload_view(self, request, object_id):
        """Refuses an upload over the limit by its declared length, before its body is
        parsed (CsrfViewMiddleware would write it all to disk first): so the URL is
        csrf_exempt, and the token is checked here, right after."""
        site = self._site_to_change(request, object_id)
        length, limit = content_length(request), upload_limit()
        if length > limit:
            error = (
                f"The upload is {size_text(length)}, over the {size_text(limit)} this page takes "
                f"in one request: import it on the server with manage.py import KIND {site.domain} FILE..."
            )
            return self._imports_page(request, site, error, status=413)
        return csrf_protect(self._start_import)(request, site)

    def _start_import(self, request, site):
        kind, uploads = request.POST.get("kind", ""), request.FILES.getlist("files")
        problem = upload_problem(kind, uploads)
        if problem:
            return self._imports_page(request, site, problem, status=400, chosen=kind)
        job = queue_import(site, kind, uploads, request.user)
        if job.status == ImportJob.Status.FAILED:  # (before its task was sent: the job's row says why)
            self.message_user(request, "The import could not start: see its job below.", messages.ERROR)
        else:
            self.message_user(
                request, f"Import of {len(uploads)} file(s) started: see its job below.", messages.SUCCESS
            )
        return redirect("admin:analytics_site_imports", site.pk)

    def remove_import_view(self, request, object_id, log_id):
        site = self._site_to_change(request, object_id)
        imported = site.imported_logs.filter(pk=log_id).first()
        if imported is None:
            raise Http404("no such import of this site")
        if imported.kind != plausible.KIND:
            self.message_user(request, f"The import {imported.name} cannot be removed: {NOT_REMOVABLE}", messages.ERROR)
            return redirect("admin:analytics_site_imports", site.pk)
        if request.method == "POST":
            days = plausible.remove(imported)
            self.message_user(request, f"Removed the import {imported.name}: {days} day(s).", messages.SUCCESS)
            return redirect("admin:analytics_site_imports", site.pk)
        context = {**self._keys_context(request, site, "Remove an import"), "imported": imported}
        return render(request, "admin/analytics/site/import_remove.html", context)

    def _key_page(self, request, keys, added=None):
        """New keys in clear text, this once: rendered straight into the answer to the POST
        that made them, and marked no-store so no cache or back button keeps a copy."""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"{added.domain} added" if added else ("New API keys" if len(keys) > 1 else "New API key"),
            "keys": keys,
            "site": added,
        }
        if added:
            context["snippet"] = tracking_snippet(request, added.domain)
            context["event_url"] = request.build_absolute_uri(reverse("event"))
        response = render(request, "admin/analytics/site/api_key.html", context)
        add_never_cache_headers(response)
        return response

    @admin.action(description="Create (or replace) a public read-only share link", permissions=["change"])
    def enable_sharing(self, request, queryset):
        for site in queryset:
            url = request.build_absolute_uri(reverse("dashboard:shared", args=[site.enable_sharing()]))
            messages.success(request, f"Share link for {site.domain}: {url}")

    @admin.action(description="Revoke the share link", permissions=["change"])
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
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((name, n, size_text(b)) for name, (n, b) in usage.items()),
        )
        return format_html("<table><tr><th>family</th><th>keys</th><th>memory</th></tr>{}</table>", rows)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if not change:
            obj.new_api_key = obj.create_api_key("created with the site")  # for response_add, this request only

    def response_add(self, request, obj, post_url_continue=None):
        return self._key_page(request, [(obj, obj.new_api_key)], added=obj)

    @admin.action(description="Create a new API key for the selected sites", permissions=["change"])
    def create_api_key(self, request, queryset):
        return self._key_page(request, [(site, site.create_api_key()) for site in queryset])


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "site", "name", "created", "last_used")
    list_filter = ("site",)
    readonly_fields = ("site", "prefix", "created", "last_used")
    fields = ("site", "name", "prefix", "created", "last_used")

    def has_add_permission(self, request):
        return False


# The Imports page: what each kind of file is, in one line (analytics.imports.run.KINDS).
KIND_HELP = {
    "plausible": (
        "Plausible",
        "Plausible's CSV export (Site settings > Imports & exports > Export data): the .zip, "
        "or its imported_*.csv files. Daily totals, for the days Tally has no numbers of its own.",
    ),
    "ga4": (
        "Google Analytics 4",
        "GA4's BigQuery export: the events_* tables as newline-delimited JSON (.json or .json.gz).",
    ),
    "umami": ("Umami", "Umami's website_event rows with their session's columns, as CSV (.csv or .csv.gz)."),
    "log": ("Access logs", "Apache or Nginx access logs in the combined format (plain or .gz)."),
}
NOT_REMOVABLE = "its events were counted as live ones, into the same counters as the site's own traffic."
JOBS_SHOWN = 20


def may_upload(path: str, cookie_header: str) -> bool:
    """May this request send an upload larger than any other body (server/front.py asks,
    before it reads the body)? Only to the Imports page's upload URL, from a staff member's
    live session with the right to change sites: anyone else's body stays within
    MAX_BATCH_BODY, so an anonymous request cannot fill the disk."""
    try:
        match = resolve(path)
    except Resolver404:
        return False
    cookie = SimpleCookie()
    try:
        cookie.load(cookie_header)
    except CookieError:
        return False
    morsel = cookie.get(settings.SESSION_COOKIE_NAME)
    if match.url_name != "analytics_site_import_upload" or morsel is None:
        return False
    request = HttpRequest()
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(morsel.value)
    user = get_user(request)  # (checks the session's password hash too)
    return bool(user.is_active and user.is_staff and user.has_perm("analytics.change_site"))


def upload_limit() -> int:
    """The most one upload may be, in bytes (server/front.py lets a staff member's upload
    past MAX_BATCH_BODY up to it, spooled to disk)."""
    return settings.IMPORT_UPLOAD_MAX_BYTES


def content_length(request) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0  # (as Django reads it: no body)


def upload_problem(kind: str, uploads: list[UploadedFile]) -> str:
    """Why the upload form cannot start an import ("" when it can)."""
    if kind not in run.KINDS:
        return f"Choose what the files are: {', '.join(label for label, _ in KIND_HELP.values())}."
    if not uploads:
        return "Choose the file(s) to import."
    return ""


def queue_import(site: Site, kind: str, uploads: list[UploadedFile], user) -> ImportJob:
    """A job for these uploads, its files kept in its own folder, and its task sent; a job
    whose files could not be kept or whose task could not be sent ends failed, saying so."""
    job = ImportJob.objects.create(site=site, kind=kind, names=[upload.name or "" for upload in uploads], user=user)
    try:
        job.paths = [str(keep_upload(upload, job.folder(), n)) for n, upload in enumerate(uploads, 1)]
    except OSError as e:
        log.exception("import job %s: the uploads could not be kept", job.pk)
        tasks.discard_uploads(job)
        tasks.finish(job, ImportJob.Status.FAILED, f"The upload could not be kept on the server ({e.strerror or e}).")
        return job
    job.save(update_fields=["paths"])
    try:
        tasks.run_import.delay(job.pk)
    except OperationalError:
        log.exception("import job %s: its task could not be sent", job.pk)
        tasks.discard_uploads(job)
        tasks.finish(job, ImportJob.Status.FAILED, "The import could not be queued: Celery's broker did not answer.")
    return job


def keep_upload(upload: UploadedFile, folder: Path, n: int) -> Path:
    """An upload kept as `<n>` (`<n>.gz`) in its job's folder: never under the name its
    sender gave (that would let them choose our paths), but with .gz, which says how to read it."""
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / (f"{n}.gz" if (upload.name or "").lower().endswith(".gz") else str(n))
    if hasattr(upload, "temporary_file_path"):  # (over FILE_UPLOAD_MAX_MEMORY_SIZE: already on disk)
        file_move_safe(upload.temporary_file_path(), str(kept))
    else:
        with kept.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
    return kept


def size_text(n: float) -> str:  # type: ignore[return]  # (the loop returns at "GB" at the latest)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
