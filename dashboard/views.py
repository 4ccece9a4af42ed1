"""The web UI. It reads through analytics.queries (the functions behind the read API) and
renders; it never writes to Redis."""
import functools
from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse

from analytics import queries
from analytics.queries import access, recommendations
from analytics.sites import SiteInfo
from analytics.store.connection import get_redis
from config.middleware import live_origin

from . import charts, periods

CARDS = [
    ("visitors", "Visitors"),
    ("visits", "Visits"),
    ("pageviews", "Pageviews"),
    ("views_per_visit", "Views per visit"),
    ("bounce_rate", "Bounce rate"),
    ("visit_duration", "Visit duration"),
    ("dau", "DAU (avg)"),
    ("wau", "WAU"),
    ("mau", "MAU"),
    ("stickiness", "Stickiness"),
    ("new_visitors", "New visitors"),
]
LOWER_IS_BETTER = {"bounce_rate"}


@login_required
def home(request):
    sites = access.visible_sites(request.user).order_by("domain")
    return render(request, "dashboard/home.html", {"sites": sites, "can_add": request.user.is_staff})


def site_view(view):
    """Resolve the site from a domain (logged-in users who may see it) or a share token
    (anyone holding it). Another user's site is a 404: its existence is not revealed."""

    @functools.wraps(view)
    def wrapper(request, domain=None, token=None):
        if token is not None:
            site = access.site_for_share_token(token)
            base = reverse("dashboard:shared", args=[token])
        else:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            site = access.site_for_user(request.user, domain)
            base = reverse("dashboard:site", args=[domain])
        if site is None:
            raise Http404("no such site")
        return view(request, site, SiteInfo.from_model(site), base=base, shared=token is not None)

    return wrapper


def _live_url(request, site, shared: bool) -> str:
    path = reverse("dashboard:live-shared", args=[site.share_token]) if shared else reverse("dashboard:live", args=[site.domain])
    return live_origin(request) + path


@site_view
def site(request, site, info, base, shared):
    today = info.today()
    period = periods.parse(request.GET, today)
    r = get_redis()
    tracker = request.build_absolute_uri(static("tracker.js"))
    snippet = f'<script defer data-domain="{site.domain}" src="{tracker}"></script>'
    if not queries.has_events(r, info):  # one clear state, not empty axes and a grid of 0%
        context = {"site": site, "info": info, "snippet": snippet, "event_url": request.build_absolute_uri(reverse("event"))}
        return render(request, "dashboard/waiting.html", context)
    values = queries.daily_values(r, info, period.start, period.end)
    rows = [{"date": day.isoformat(), **values[day]} for day in sorted(values)]
    totals = queries.aggregate(r, info, period.start, period.end, compare="previous_period", values=values)
    pages = queries.top_pages(r, info, period.start, period.end, limit=10)
    retention_day = [] if info.daily_salt else queries.retention(r, info, "day", max(period.start, period.end - timedelta(days=29)), period.end, 30)
    retention_week = [] if info.daily_salt else queries.retention(r, info, "week", period.end - timedelta(weeks=11), period.end, 12)
    figures = {
        "visitors": charts.visitors(queries.hourly(r, info, period.start, period.end), hourly=True)
        if period.days <= queries.MAX_HOUR_DAYS
        else charts.visitors(rows),
        "actives": charts.actives(rows),
        "pages": charts.top_pages(pages),
        "retention-day": charts.retention(retention_day, "day"),
        "retention-week": charts.retention(retention_week, "week"),
    }
    cards = [_card(key, label, totals[key]) for key, label in CARDS if not (key == "new_visitors" and totals[key]["value"] is None)]
    pageviews = totals["pageviews"]
    return render(
        request,
        "dashboard/site.html",
        {
            "site": site,
            "info": info,
            "period": period,
            "choices": periods.CHOICES,
            "cards": cards,
            "pages": pages,
            "figures": figures,
            "has_data": bool(pageviews["value"] or pageviews["change"] is not None or pages),
            "shared": shared,
            "base": base,
            "live_url": _live_url(request, site, shared),
            "snippet": snippet,
            "event_url": request.build_absolute_uri(reverse("event")),
            "daily_salt": info.daily_salt,
            "export_formats": [("csv", "CSV"), ("xlsx", "Excel"), ("json", "JSON")],
        },
        status=400 if period.error else 200,  # (the page says what was wrong, and shows 30 days)
    )


def _card(key: str, label: str, total: dict) -> dict:
    """A card: its value, its change in percent, and whether that change is good news
    (a bounce rate going down is)."""
    change = total.get("change")
    return {
        "key": key,
        "label": label,
        "value": total["value"],
        "change": change,
        "good": None if not change else (change < 0) == (key in LOWER_IS_BETTER),
        "new": "change" in total and change is None and bool(total["value"]),
    }


@site_view
def search(request, site, info, base, shared):
    prefix = request.GET.get("q", "")[:200]
    return JsonResponse({"pages": queries.search_pages(get_redis(), info, prefix, limit=10)})


@site_view
def page(request, site, info, base, shared):
    path = request.GET.get("path", "")[:1024]
    period = periods.parse(request.GET, info.today())
    rows = queries.page_timeseries(get_redis(), info, path, period.start, period.end)
    return JsonResponse({"path": path, "figure": charts.page(rows, path)})


@site_view
def realtime(request, site, info, base, shared):
    """The polling fallback of the live counter."""
    from datetime import UTC, datetime

    return JsonResponse({"visitors": queries.realtime_visitors(get_redis(), info, datetime.now(UTC))})


@site_view
def recommend(request, site, info, base, shared):
    """The recommendation panel: top pages the visitor has not seen (looking does not
    count as the visitor's activity: the dashboard never writes). It tells what one
    person has seen, so never through a share link."""
    if shared:
        raise Http404("not shared")
    user = request.GET.get("user", "").strip()[:256]
    if not user:
        return JsonResponse({"error": "enter a visitor's user id"}, status=400)
    return JsonResponse({"user": user, "pages": recommendations.unseen_top_pages(get_redis(), info, user, 10, 7, touch=False)})


@site_view
def filters(request, site, info, base, shared):
    """The site's Bloom filters: how many, their memory, fill and expected error."""
    if shared:
        raise Http404("not shared")
    return JsonResponse(recommendations.filter_stats(get_redis(), info))


PAGES_PER_VIEW = 50
MAX_PAGES_LISTED = 2000


@site_view
def pages(request, site, info, base, shared):
    """Every page of the period, most visitors first, 50 at a time, with a search (paths
    containing the text). Ranked as the top-pages card ranks (the read API's numbers)."""
    period = periods.parse(request.GET, info.today())
    search = request.GET.get("q", "").strip()[:200]
    try:
        number = max(1, int(request.GET.get("page", "1")))
    except ValueError:
        number = 1
    ranked = queries.top_pages(get_redis(), info, period.start, period.end, limit=MAX_PAGES_LISTED)
    if search:
        ranked = [p for p in ranked if search.lower() in p["page"].lower()]
    last = max(1, -(-len(ranked) // PAGES_PER_VIEW))
    number = min(number, last)
    shown = ranked[(number - 1) * PAGES_PER_VIEW : number * PAGES_PER_VIEW]
    context = {
        "site": site,
        "info": info,
        "period": period,
        "base": base,
        "pages": shown,
        "search": search,
        "number": number,
        "last": last,
        "total": len(ranked),
        "first_rank": (number - 1) * PAGES_PER_VIEW + 1,
        "capped": len(ranked) >= MAX_PAGES_LISTED and not search,
    }
    return render(request, "dashboard/pages.html", context)
