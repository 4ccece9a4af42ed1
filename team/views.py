"""A site's settings pages in the product's own look (outside the Django admin, which
staff keep for the engine's settings): general, members (roles and invitations), the
audit log; and the page an invitation's link opens."""

import functools
import re
import zoneinfo
from datetime import date, timedelta

import redis
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.hashers import make_password
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator, validate_email
from django.db import transaction
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from analytics.admin import size_text
from analytics.dropped import LABELS
from analytics.ingest.bots import data_dates
from analytics.models import Exclusion, Funnel, Goal, ShareLinkOptions, Site
from analytics.queries import access

from . import alerts, audit, mail, reports, roles
from .models import RANK, ROLE_WORDS, Alert, AuditEvent, Delivery, Invitation, Membership, Report, Role

SETTINGS_PAGES = (
    ("general", "General"),
    ("members", "Members"),
    ("reports", "Email reports"),
    ("goals", "Goals and funnels"),
    ("keys", "API keys"),
    ("alerts", "Alerts"),
    ("sharing", "Share links"),
    ("exclusions", "Exclusions"),
    ("imports", "Imports"),
    ("advanced", "Advanced"),
    ("audit", "Audit log"),
)
# The advanced page: the engine's limits and expiry policy, each said in a user's words
# (what it changes for the numbers you see), beside the model's own help (what it is).
ADVANCED = {
    "keep_realtime_minutes": "How far back the realtime view's minute chart reaches (30 shows all of it).",
    "keep_page_days": "How long each day's page counts stay in Redis after the day is done; older days are "
    "read from the stored rows, so nothing disappears.",
    "keep_page_period_days": "Unique visitors of a page over several old days read these; shorter saves memory, "
    "and older page ranges become sums of days.",
    "keep_daily_days": "How long a day's visitor bitmaps stay: they make uniques over any range exact, and "
    "retention. Older days answer from their stored rows and sketches.",
    "keep_segment_days": "How long filters stay exact: past it, a filtered day is an estimate (marked ≈).",
    "segment_values": "How many values of each property (sources, countries, pages...) a day get exact "
    "filters; the rest are estimated (≈).",
    "max_pages_per_day": "A site with endless page paths (search pages, ids) keeps its top ones; the rest count "
    "under (other).",
    "max_event_names_per_day": "The same for custom event names.",
    "max_property_values": "The same for the values of one custom property.",
    "max_property_names": "The same for the property names of one custom event.",
    "max_property_groups": "The same for all custom properties together: a bound on what random properties cost.",
    "drop_referrer_spam": "Referrer spam (fake visits that advertise a site in your referrers, from Matomo's "
    "public list) is dropped as bots are; switch it off if it ever drops a real referrer.",
    "drop_crawlers": "Crawlers, monitors and scripts that name themselves in their User-Agent are dropped; "
    "switch it off only to count them (the batch API's bots=keep does so per request).",
    "drop_datacenters": "Events from cloud and hosting providers' addresses (AWS, Azure, Google, Oracle, "
    "DigitalOcean, Linode, Vultr, GitHub) are dropped: people browse from homes, offices and phones, scripts "
    "from servers. Switch it off if your visitors come through a company proxy in the cloud.",
    "pattern_pageviews": "A visitor with more pageviews than this in 10 minutes is no person: they are flagged "
    "and their events are dropped for the rest of the day (0: never).",
    "ingest_rate_per_minute": "Events a minute this site accepts (0: no limit); beyond, clients get 429 and retry.",
    "bloom_capacity": "Recommendations: the pages and items each visitor's 'seen' filter holds before it grows.",
    "bloom_error_rate": "Recommendations: how often an unseen item may be taken for seen.",
    "bloom_expansion": "Recommendations: how much bigger each new part of a full filter is.",
    "bloom_nonscaling": "Recommendations: a full filter refuses new items instead of growing.",
    "bloom_idle_days": "Recommendations: a visitor's filter unused this long is dropped.",
    "bloom_max_memory_mb": "Recommendations: the memory all this site's filters may use together.",
}
ORIGIN = re.compile(r"^https?://[a-z0-9.-]+(:\d{1,5})?$")
DELIVERY_ROWS = 50
AUDIT_ROWS = 200


def settings_view(role: str):
    """A settings page of one site: for its members with at least `role` (staff too). A
    member removed gets 403 (and is told why), any other account 404 (the site stays
    hidden), anonymous visitors the login page."""

    def decorate(view):
        @login_required
        @functools.wraps(view)
        def wrapper(request, domain, **kwargs):
            site = access.site_for_user(request.user, domain)
            if site is None:
                gone = Site.objects.filter(domain=domain.strip().lower()).first()
                if gone is not None and roles.was_removed(request.user, gone):
                    raise PermissionDenied(f"You were removed from {gone.domain}.")
                raise Http404("no such site")
            if not roles.may(request.user, site, role):
                raise PermissionDenied(
                    f"This page takes the {Role(role).label.lower()} role on {site.domain} (or more)."
                )
            return view(request, site, **kwargs)

        return wrapper

    return decorate


def _page(request, site: Site, key: str, template: str, context: dict):
    """A settings page, its tabs those the reader's role opens (an editor's: goals)."""
    admin = roles.may(request.user, site, Role.ADMIN)
    return render(
        request,
        template,
        {
            "site": site,
            "pages": [(k, label) for k, label in SETTINGS_PAGES if admin or k == "goals"],
            "current": key,
            "role": roles.role_of(request.user, site),
            **context,
        },
    )


def _grantable(user, site: Site) -> list[tuple[str, str]]:
    """The roles this user may give: up to admin, owner only by an owner."""
    mine = roles.role_of(user, site)
    return [(r.value, r.label) for r in Role if r != Role.OWNER or mine == Role.OWNER]


@settings_view(Role.ADMIN)
def general(request, site: Site):
    """Time zone and visitor identity, explained in plain words."""
    error = ""
    if request.method == "POST":
        zone = request.POST.get("timezone", "").strip()
        mode = request.POST.get("identity_mode", "")
        if zone not in zoneinfo.available_timezones():
            error = f"{zone[:60]!r} is no time zone: pick one from the list (e.g. Europe/Berlin)."
        elif mode not in Site.IdentityMode.values:
            error = "Pick how visitors are recognised."
        else:
            changed = [
                f"{name} {before} → {after}"
                for name, before, after in (("time zone", site.timezone, zone), ("identity", site.identity_mode, mode))
                if before != after
            ]
            site.timezone, site.identity_mode = zone, mode
            site.save(update_fields=["timezone", "identity_mode"])
            if changed:
                audit.record(site, request.user, "settings.changed", "; ".join(changed))
            messages.success(request, "Saved.")
            return HttpResponseRedirect(request.path)
    return _page(
        request,
        site,
        "general",
        "team/general.html",
        {"zones": sorted(zoneinfo.available_timezones()), "modes": Site.IdentityMode.choices, "error": error},
    )


@settings_view(Role.ADMIN)
def members(request, site: Site):
    """The site's members and their roles, pending invitations, and the invite form."""
    invited = None
    if request.method == "POST":
        invited = _members_action(request, site)
        if invited is None:
            return HttpResponseRedirect(request.path)
    owner = roles.role_of(request.user, site) == Role.OWNER
    memberships = site.memberships.filter(removed__isnull=True).select_related("user").order_by("user__username")
    page = _page(
        request,
        site,
        "members",
        "team/members.html",
        {
            "memberships": [
                {
                    "m": m,
                    "you": m.user_id == request.user.pk,
                    "changeable": owner or m.role != Role.OWNER,
                }
                for m in memberships
            ],
            "invitations": [i for i in site.invitations.filter(accepted__isnull=True) if i.is_open],
            "grantable": _grantable(request.user, site),
            "role_words": [(Role(r).label, words) for r, words in ROLE_WORDS.items()],
            "email_on": bool(mail_configured()),
            "invited": invited,
        },
    )
    if invited:
        page["Cache-Control"] = "no-store"
    return page


def mail_configured() -> bool:
    return bool(settings.EMAIL_URL)


def _members_action(request, site: Site) -> dict | None:
    """Do the posted action; an invitation made answers {"email", "url", "mailed"} (its
    link is shown on this answer alone: never in a message, which is a cookie)."""
    action = request.POST.get("action", "")
    grantable = dict(_grantable(request.user, site))
    if action == "invite":
        email, role = request.POST.get("email", "").strip().lower(), request.POST.get("role", "")
        try:
            validate_email(email)
        except ValidationError:
            messages.error(request, "Type the email address to invite.")
            return None
        if role not in grantable:
            messages.error(request, "You may not give that role.")
            return None
        invitation, token = Invitation.create(site, email, role, by=request.user)
        url = mail.link(reverse("team:invitation", args=[token]))
        sent = mail.send_invitation(invitation, url)
        audit.record(site, request.user, "member.invited", f"{email} as {Role(role).label.lower()}")
        return {"email": email, "url": url, "mailed": bool(sent and mail_configured())}
    if action == "revoke":
        pending = site.invitations.filter(pk=_number(request.POST.get("invitation")), accepted__isnull=True).first()
        if pending is not None:
            pending.delete()
            audit.record(site, request.user, "invitation.revoked", pending.email)
        return None
    active = site.memberships.filter(removed__isnull=True).select_related("user")
    membership = active.filter(pk=_number(request.POST.get("membership"))).first()
    if membership is None:
        messages.error(request, "No such member.")
        return None
    if membership.role == Role.OWNER and Role.OWNER not in grantable:
        messages.error(request, "Only an owner may change an owner.")
        return None
    name = membership.user.get_username()
    if action == "role":
        role = request.POST.get("role", "")
        if role not in grantable:
            messages.error(request, "You may not give that role.")
            return None
        if membership.role == Role.OWNER and role != Role.OWNER and _last_owner(site, membership):
            messages.error(request, "A site keeps at least one owner: make someone else owner first.")
            return None
        before = membership.get_role_display()
        membership.role = role
        membership.save(update_fields=["role"])
        audit.record(site, request.user, "member.role", f"{name}: {before.lower()} → {Role(role).label.lower()}")
    elif action == "remove":
        if membership.role == Role.OWNER and _last_owner(site, membership):
            messages.error(request, "A site keeps at least one owner: make someone else owner first.")
            return None
        membership.removed = timezone.now()
        membership.save(update_fields=["removed"])
        audit.record(site, request.user, "member.removed", f"{name} ({membership.get_role_display().lower()})")
        messages.success(request, f"{name} may no longer see {site.domain}.")
    return None


def _number(text) -> int:
    """A posted id (0, which no row has, for anything else)."""
    return int(text) if isinstance(text, str) and text.isdigit() and len(text) < 19 else 0


def _last_owner(site: Site, membership: Membership) -> bool:
    return not site.memberships.filter(role=Role.OWNER, removed__isnull=True).exclude(pk=membership.pk).exists()


@settings_view(Role.ADMIN)
def reports_page(request, site: Site):
    """Who gets the site's weekly and monthly reports; add, remove, send one now."""
    if request.method == "POST":
        _reports_action(request, site)
        return HttpResponseRedirect(request.path)
    return _page(
        request,
        site,
        "reports",
        "team/reports.html",
        {
            "reports": site.reports.order_by("email", "frequency"),
            "frequencies": Report.Frequency.choices,
            "members": site.memberships.filter(removed__isnull=True).exclude(user__email="").select_related("user"),
            "email_on": mail_configured(),
            "me": request.user.email,
        },
    )


def _reports_action(request, site: Site) -> None:
    action = request.POST.get("action", "")
    if action == "add":
        email, frequency = request.POST.get("email", "").strip().lower(), request.POST.get("frequency", "")
        try:
            validate_email(email)
        except ValidationError:
            messages.error(request, "Type the address to send the report to.")
            return
        if frequency not in Report.Frequency.values:
            messages.error(request, "Pick weekly or monthly.")
            return
        _, made = Report.objects.get_or_create(
            site=site, email=email, frequency=frequency, defaults={"added_by": request.user}
        )
        if made:
            audit.record(site, request.user, "report.added", f"{frequency} to {email}")
        return
    report = site.reports.filter(pk=_number(request.POST.get("report"))).first()
    if report is None:
        messages.error(request, "No such report.")
        return
    if action == "remove":
        report.delete()
        audit.record(site, request.user, "report.removed", f"{report.frequency} to {report.email}")
    elif action == "test":
        to = request.user.email or report.email
        period = reports.last_period(report.frequency, site_today(site))
        reports.send(report, period, to=to, test=True)
        audit.record(site, request.user, "report.test", f"{report.frequency} ({period.key}) to {to}")
        where = "" if mail_configured() else " (no mail server is set: it went to the log)"
        messages.success(request, f"Sent the {report.frequency} report for {period.label} to {to}{where}.")


def site_today(site: Site):
    from analytics.sites import SiteInfo

    return timezone.now().astimezone(SiteInfo.from_model(site).tz).date()


@csrf_exempt  # (the link's signed token is the authority; mail clients POST one-click unsubscribes, RFC 8058)
def unsubscribe(request, token: str):
    report = reports.report_for_token(token)
    if report is None:
        return render(request, "team/unsubscribed.html", {"gone": True}, status=410)
    if request.method == "POST":
        report.delete()
        audit.record(report.site, None, "report.unsubscribed", f"{report.frequency} to {report.email}")
        return render(request, "team/unsubscribed.html", {"report": report, "done": True})
    return render(request, "team/unsubscribed.html", {"report": report, "token": token})


@settings_view(Role.ADMIN)
def alerts_page(request, site: Site):
    """The site's traffic alerts, their channels, and the log of what was delivered."""
    if request.method == "POST":
        _alerts_action(request, site)
        return HttpResponseRedirect(request.path)
    return _page(
        request,
        site,
        "alerts",
        "team/alerts.html",
        {
            "alerts": site.alerts.all(),
            "kinds": Alert.Kind.choices,
            "deliveries": Delivery.objects.filter(alert__site=site).select_related("alert")[:DELIVERY_ROWS],
            "signature": alerts.SIGNATURE,
            "email_on": mail_configured(),
        },
    )


def _alerts_action(request, site: Site) -> None:
    action = request.POST.get("action", "")
    if action == "add":
        kind, threshold = request.POST.get("kind", ""), request.POST.get("threshold", "").strip()
        emails = [line.strip().lower() for line in request.POST.get("emails", "").replace(",", "\n").splitlines()]
        emails = [e for e in emails if e]
        urls = {name: request.POST.get(name, "").strip() for name in ("slack_url", "webhook_url")}
        problem = ""
        if kind not in Alert.Kind.values:
            problem = "Pick a spike or a drop."
        elif not threshold.isdigit() or not 0 < int(threshold) < (100 if kind == Alert.Kind.DROP else 10**9):
            problem = "A spike takes a number of visitors; a drop a percent between 1 and 99."
        elif not (emails or urls["slack_url"] or urls["webhook_url"]):
            problem = "Say where to send it: an address, a Slack webhook or a webhook."
        else:
            for email in emails:
                try:
                    validate_email(email)
                except ValidationError:
                    problem = f"{email[:80]!r} is no email address."
            for url in urls.values():
                try:
                    if url:
                        URLValidator(schemes=["http", "https"])(url)
                except ValidationError:
                    problem = f"{url[:80]!r} is no http(s) address."
        if problem:
            messages.error(request, problem)
            return
        made = Alert.objects.create(site=site, kind=kind, threshold=int(threshold), emails="\n".join(emails), **urls)
        audit.record(site, request.user, "alert.added", str(made))
        return
    alert = site.alerts.filter(pk=_number(request.POST.get("alert"))).first()
    if alert is None:
        messages.error(request, "No such alert.")
        return
    if action == "remove":
        alert.delete()
        audit.record(site, request.user, "alert.removed", str(alert))
    elif action == "toggle":
        alert.enabled = not alert.enabled
        alert.save(update_fields=["enabled"])
        audit.record(site, request.user, "alert.enabled" if alert.enabled else "alert.paused", str(alert))
    elif action == "test":
        text = "a test of this alert, sent from its settings page"
        alerts.fire(alert, {"visitors": 0, "text": text}, timezone.now())
        audit.record(site, request.user, "alert.test", str(alert))
        messages.success(request, "Sent a test on each of its channels: see the log below.")


@settings_view(Role.ADMIN)
def sharing_page(request, site: Site):
    """The site's read-only links (the whole site's, and each segment's) and what
    protects each: a password, embedding from listed origins, a last day."""
    if request.method == "POST":
        _sharing_action(request, site)
        return HttpResponseRedirect(request.path)
    links: list[dict] = []
    if site.share_token:
        links.append({"token": site.share_token, "name": "The whole site", "segment": None})
    for segment in site.segments.exclude(share_token__isnull=True).exclude(share_token=""):
        links.append({"token": segment.share_token, "name": f"Segment {segment.name}", "segment": segment})
    options = {o.token: o for o in ShareLinkOptions.objects.filter(site=site)}
    for found in links:
        found["url"] = request.build_absolute_uri(reverse("dashboard:shared", args=[found["token"]]))
        found["options"] = options.get(found["token"])
    return _page(request, site, "sharing", "team/sharing.html", {"links": links, "today": site_today(site)})


def _link_token(site: Site, token: str) -> str | None:
    """The token, if it is one of this site's links."""
    if token and (site.share_token == token or site.segments.filter(share_token=token).exists()):
        return token
    return None


def _sharing_action(request, site: Site) -> None:
    action = request.POST.get("action", "")
    if action == "create":
        site.enable_sharing()
        audit.record(site, request.user, "share.created", "the whole site's link (a new token)")
        return
    token = _link_token(site, request.POST.get("token", ""))
    if token is None:
        messages.error(request, "No such link.")
        return
    if action == "revoke":
        if token == site.share_token:
            site.revoke_sharing()
        else:
            for segment in site.segments.filter(share_token=token):
                segment.unshare()
        audit.record(site, request.user, "share.revoked", "a share link")
        messages.success(request, "The link no longer works.")
        return
    if action != "options":
        return
    origins = [line.strip().rstrip("/").lower() for line in request.POST.get("origins", "").split()]
    bad = [o for o in origins if not ORIGIN.match(o)]
    expires_text = request.POST.get("expires", "").strip()
    try:
        expires = date.fromisoformat(expires_text) if expires_text else None
    except ValueError:
        expires = None
        bad.append(expires_text)
    if bad:
        messages.error(request, f"{bad[0][:80]!r}: origins are like https://example.com, a last day is a date.")
        return
    embed = request.POST.get("embed") == "on"
    if embed and not origins:
        messages.error(request, "An embeddable link lists the origins of the pages that may frame it.")
        return
    options, _ = ShareLinkOptions.objects.get_or_create(token=token, defaults={"site": site})
    password = request.POST.get("password", "")
    changes = []
    if request.POST.get("no_password") == "on":
        if options.password:
            changes.append("password removed")
        options.password = ""
    elif password:
        if len(password) < 8:
            messages.error(request, "A link's password has at least 8 characters.")
            return
        options.password = make_password(password)
        changes.append("password set")
    options.embed, options.origins, options.expires = embed, "\n".join(origins), expires
    options.save()
    changes += [f"embed {'on: ' + ' '.join(origins) if embed else 'off'}", f"last day {expires or 'none'}"]
    audit.record(site, request.user, "share.options", "; ".join(changes))
    messages.success(request, "Saved.")


@settings_view(Role.EDITOR)
def goals_page(request, site: Site):
    """The site's goals (a custom event, or pageviews of a path pattern) and funnels."""
    if request.method == "POST":
        _goals_action(request, site)
        return HttpResponseRedirect(request.path)
    return _page(
        request,
        site,
        "goals",
        "team/goals.html",
        {"goals": site.goals.all(), "funnels": site.funnels.all()},
    )


def _goals_action(request, site: Site) -> None:
    action, post = request.POST.get("action", ""), request.POST
    made: Goal | Funnel
    if action in ("add_goal", "add_funnel"):
        if action == "add_goal":
            kind = post.get("kind", "event")
            made = Goal(
                site=site,
                name=post.get("name", "").strip()[:120],
                event_name=post.get("value", "").strip()[:120] if kind == "event" else "",
                page_pattern=post.get("value", "").strip()[:1024] if kind == "page" else "",
            )
        else:
            made = Funnel(site=site, name=post.get("name", "").strip()[:120], steps=post.get("steps", "")[:20000])
        try:
            made.full_clean()
        except ValidationError as e:
            messages.error(request, " ".join(m for ms in e.message_dict.values() for m in ms))
            return
        made.save()
        audit.record(site, request.user, f"{'goal' if action == 'add_goal' else 'funnel'}.added", made.name)
        return
    if action in ("delete_goal", "delete_funnel"):
        rows = site.goals if action == "delete_goal" else site.funnels
        found = rows.filter(pk=_number(post.get("id"))).first()
        if found is None:
            messages.error(request, "No such goal or funnel.")
            return
        found.delete()
        audit.record(site, request.user, f"{'goal' if action == 'delete_goal' else 'funnel'}.deleted", found.name)


@settings_view(Role.ADMIN)
def keys_page(request, site: Site):
    """The site's API keys (a key is shown once, on the page that made it: never stored
    nor put in a cookie or a message), made and revoked here."""
    made = ""
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action == "create":
            name = request.POST.get("name", "").strip()[:100]
            made = site.create_api_key(name)
            audit.record(site, request.user, "key.created", f"{made[:10]}… {name}")
        elif action == "revoke":
            key = site.api_keys.filter(pk=_number(request.POST.get("id"))).first()
            if key is not None:
                key.delete()
                audit.record(site, request.user, "key.revoked", f"{key.prefix}… {key.name}")
            return HttpResponseRedirect(request.path)
    response = _page(
        request, site, "keys", "team/keys.html", {"keys": site.api_keys.order_by("-created"), "made": made}
    )
    if made:
        response["Cache-Control"] = "no-store"
    return response


class AdvancedForm(forms.ModelForm):
    class Meta:
        model = Site
        fields = list(ADVANCED)


@settings_view(Role.ADMIN)
def advanced_page(request, site: Site):
    """The engine's limits and expiry policy for this site, each explained, with what
    today's keys cost in Redis (analytics.keyspace)."""
    before = {name: getattr(site, name) for name in ADVANCED}
    form = AdvancedForm(request.POST or None, instance=site)
    if request.method == "POST" and form.is_valid():
        form.save()
        changed = [
            f"{name} {before[name]} → {getattr(site, name)}" for name in ADVANCED if before[name] != getattr(site, name)
        ]
        if changed:
            audit.record(site, request.user, "settings.advanced", "; ".join(changed))
        messages.success(request, "Saved: the new policy applies from the next rollup.")
        return HttpResponseRedirect(request.path)
    memory, per_bitmap = _memory(site)
    fields = [
        {"field": form[name], "words": words, "cost": _cost(name, getattr(site, name), per_bitmap)}
        for name, words in ADVANCED.items()
    ]
    context = {"form": form, "fields": fields, "memory": memory, "bot_data": data_dates(), "dropped": _dropped(site)}
    return _page(request, site, "advanced", "team/advanced.html", context)


def _dropped(site: Site) -> list[tuple[str, int]] | None:
    """The last 30 days' events not counted, by reason (every reason named), beside the
    switches that decide them; None when Redis cannot be read."""
    from analytics import queries
    from analytics.sites import SiteInfo
    from analytics.store.connection import get_redis

    info = SiteInfo.from_model(site)
    today = info.today()
    try:
        totals = queries.run(get_redis(), queries.Query(info, today - timedelta(days=29), today, "dropped")).totals
    except redis.exceptions.RedisError:
        return None
    return [(LABELS.get(reason, reason), n) for reason, n in totals.items()]


def _memory(site: Site) -> tuple[list[tuple[str, int, str]], float]:
    """Today's keys of each family, and one filter bitmap's bytes today (0 when none)."""
    from analytics.keyspace import memory_today
    from analytics.sites import SiteInfo
    from analytics.store.connection import get_redis

    try:
        usage = memory_today(get_redis(), SiteInfo.from_model(site))
    except redis.exceptions.RedisError:
        return [], 0.0
    bitmaps = next((v for k, v in usage.items() if k.startswith("filter bitmaps")), (0, 0))
    return [(name, n, size_text(b)) for name, (n, b) in usage.items()], (bitmaps[1] / bitmaps[0] if bitmaps[0] else 0.0)


def _cost(name: str, value, per_bitmap: float) -> str:
    """What a setting costs in memory, from today's filter bitmaps' size."""
    if not per_bitmap:
        return ""
    if name == "segment_values":
        most = size_text(per_bitmap * value * 20)  # (about 20 properties a day)
        return f"about {size_text(per_bitmap)} a value a day (today's bitmaps), up to {most} a day"
    if name == "keep_segment_days":
        return f"a filter bitmap kept {value} days: about {size_text(per_bitmap * value)} each"
    return ""


@settings_view(Role.ADMIN)
def exclusions_page(request, site: Site):
    """Traffic the site does not count: addresses and networks, path patterns, hosts; and
    the link that stops counting your own browser."""
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action == "add":
            made = Exclusion(site=site, kind=request.POST.get("kind", ""), value=request.POST.get("value", "")[:300])
            try:
                made.full_clean()
            except ValidationError as e:
                messages.error(request, " ".join(m for ms in e.message_dict.values() for m in ms))
            else:
                made.save()
                audit.record(site, request.user, "exclusion.added", str(made))
        elif action == "remove":
            found = site.exclusions.filter(pk=_number(request.POST.get("id"))).first()
            if found is not None:
                found.delete()
                audit.record(site, request.user, "exclusion.removed", str(found))
        return HttpResponseRedirect(request.path)
    return _page(
        request,
        site,
        "exclusions",
        "team/exclusions.html",
        {"exclusions": site.exclusions.all(), "kinds": Exclusion.Kind.choices},
    )


@settings_view(Role.ADMIN)
def imports_page(request, site: Site):
    """The history imported into the site (GA4, Umami, access logs, Plausible's export)
    and the background jobs; imports run from a terminal (manage.py import) or, for
    staff, from the admin's upload page (files up to 4 GB)."""
    return _page(
        request,
        site,
        "imports",
        "team/imports.html",
        {
            "logs": site.imported_logs.order_by("-created"),
            "jobs": site.import_jobs.order_by("-created")[:20],
            "staff": request.user.is_staff,
        },
    )


@settings_view(Role.ADMIN)
def audit_log(request, site: Site):
    events = AuditEvent.objects.filter(site=site).select_related("actor")[:AUDIT_ROWS]
    return _page(request, site, "audit", "team/audit.html", {"events": events, "rows": AUDIT_ROWS})


def invitation(request, token: str):
    """The page an invitation's link opens: join with the account you are signed in to,
    or make one (its email the invitation's). Once used, expired or revoked: 410."""
    found = Invitation.open_for(token)
    if found is None:
        return render(request, "team/invitation_gone.html", status=410)
    error = ""
    if request.method == "POST":
        # (claimed first, by a conditional update: of two posts of one link, one wins; the
        # other makes no account)
        now = timezone.now()
        if not Invitation.objects.filter(pk=found.pk, accepted__isnull=True).update(accepted=now):
            return render(request, "team/invitation_gone.html", status=410)
        user = request.user if request.user.is_authenticated else None
        if user is None:
            user, error = _new_account(request, found)
        if user is None:
            Invitation.objects.filter(pk=found.pk, accepted=now).update(accepted=None)  # (the form again)
        else:
            _accept(found, user)
            if not request.user.is_authenticated:
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"You joined {found.site.domain} as {found.get_role_display().lower()}.")
            return HttpResponseRedirect(reverse("dashboard:site", args=[found.site.domain]))
    return render(
        request,
        "team/invitation.html",
        {"invitation": found, "error": error, "username": request.POST.get("username", "")},
    )


def _new_account(request, found: Invitation):
    """(the new account, "") from the sign-up form, or (None, what is wrong)."""
    User = get_user_model()
    username = request.POST.get("username", "").strip()
    password = request.POST.get("password", "")
    if not username or len(username) > 150:
        return None, "Choose a user name (up to 150 characters)."
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        return None, "A user name has letters, digits and @ . + - _ only."
    if User.objects.filter(username__iexact=username).exists():
        return None, "That user name is taken: choose another, or sign in first if it is yours."
    if password != request.POST.get("password2", ""):
        return None, "The two passwords differ."
    candidate = User(username=username, email=found.email)
    try:
        validate_password(password, candidate)
    except ValidationError as e:
        return None, " ".join(e.messages)
    candidate.set_password(password)
    candidate.save()
    return candidate, ""


@transaction.atomic
def _accept(found: Invitation, user) -> None:
    """Join the invitation's site with its role (never lowering a role already held); the
    invitation, claimed already, names who used it."""
    current = Membership.objects.filter(site=found.site, user=user, removed__isnull=True).first()
    if current is None or RANK[Role(current.role)] < RANK[Role(found.role)]:
        roles.add_member(found.site, user, found.role)
    Invitation.objects.filter(pk=found.pk).update(accepted_by=user)
    audit.record(found.site, user, "member.joined", f"{user.get_username()} as {found.get_role_display().lower()}")
