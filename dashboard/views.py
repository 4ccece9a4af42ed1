"""The web UI. It reads through analytics.queries (the functions behind the read API) and
renders; it never writes counts to Redis (a share link's per-client rate buckets aside)."""

import functools
import hashlib
import zoneinfo
from datetime import UTC, date, datetime, timedelta
from urllib.parse import parse_qsl

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse
from django.utils.formats import date_format
from django.views.decorators.http import require_POST

from analytics import queries
from analytics.countries import COUNTRIES
from analytics.dropped import LABELS
from analytics.models import Annotation, Segment, Site
from analytics.queries import access
from analytics.queries.segments import CUSTOM
from analytics.queries.segments import parse as segments_parse
from analytics.sites import SiteInfo, tracking_snippet
from analytics.store.connection import get_redis
from recommendations import queries as recommendations
from server.middleware import live_origin
from server.share import share_render_refused, share_throttled
from team import audit, roles
from team.models import Role

from . import charts, filtering, panels, periods, sharing

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
PROPERTY_ROWS = 10
REALTIME_PANELS = (  # the realtime view's lists: (key, title, column)
    ("page", "Pages", "Page"),
    ("source", "Sources", "Source"),
    ("country", "Countries", "Country"),
    ("device", "Devices", "Device"),
)  # values of each custom property in the Goals card's Properties tab


@login_required
def home(request):
    """The sites list: each site's visitors in the last 24 hours, and their hours."""
    r, now = get_redis(), datetime.now(UTC)
    rows = []
    for found in access.visible_sites(request.user).order_by("domain"):
        visitors, hours = queries.last_24_hours(r, SiteInfo.from_model(found), now)
        rows.append({"site": found, "visitors": visitors, "hours": hours, "points": charts.sparkline(hours)})
    return render(request, "dashboard/home.html", {"rows": rows, "can_add": roles.may_add_sites(request.user)})


@login_required
def add_site(request):
    """A new site: its domain and time zone, then its dashboard, which shows the tracking
    snippet and waits for the first event. Its creator owns it (staff need not)."""
    if not roles.may_add_sites(request.user):
        raise PermissionDenied("Adding sites takes staff, or the owner role on a site.")
    error, domain, zone = "", request.POST.get("domain", "").strip().lower(), request.POST.get("timezone", "UTC")
    if request.method == "POST":
        domain = domain.removeprefix("https://").removeprefix("http://").split("/", 1)[0]
        made = Site(domain=domain, timezone=zone.strip())
        try:
            made.full_clean()
        except ValidationError as e:
            error = " ".join(f"{' '.join(v)}" for v in e.message_dict.values())
        else:
            made.save()
            roles.add_member(made, request.user, Role.OWNER)
            audit.record(made, request.user, "site.added", made.domain)
            return HttpResponseRedirect(reverse("dashboard:site", args=[made.domain]))
    return render(
        request,
        "dashboard/add_site.html",
        {"error": error, "domain": domain, "timezone": zone, "zones": sorted(zoneinfo.available_timezones())},
    )


def site_view(view):
    """Resolve the site from a domain (logged-in users who may see it) or a share token
    (anyone holding it). Another user's site is a 404: its existence is not revealed."""

    @functools.wraps(view)
    def wrapper(request, domain=None, token=None, **kwargs):
        if token is not None:
            refused = share_throttled(request)
            if refused is not None:
                return refused
            site = access.site_for_share_token(token)  # (first: a revoked link ends at once, cached answers too)
            segment = access.segment_for_share_token(token) if site is None else None
            if segment is not None:  # (a segment's link: its filters on every answer, whatever the URL says)
                site = segment.site
                request.GET = _with_segment(request.GET, segment.filters)
            options = access.share_options(token) if site is not None else None
            if site is not None and not sharing.unlocked(request, token, options):
                return _locked(request, token, site)  # (before the cache: a cached page is no way round it)
            cacheable = view.__name__ not in UNCACHED
            cached = cache.get(_share_cache_key(request, options)) if site is not None and cacheable else None
            if cached is not None:
                return cached
            refused = share_render_refused(request, site.pk) if site is not None and cacheable else None
            if refused is not None:
                return refused
            base = reverse("dashboard:shared", args=[token])
            request.share_token = token  # (the link's own: a segment's page must never name the site's)
        else:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            site = access.site_for_user(request.user, domain)
            base = reverse("dashboard:site", args=[domain])
            if site is None:
                gone = Site.objects.filter(domain=domain.strip().lower()).first()
                if gone is not None and roles.was_removed(request.user, gone):
                    raise PermissionDenied(f"You were removed from {gone.domain}.")  # (others: 404, it is hidden)
        if site is None:
            raise Http404("no such site")
        response = view(request, site, SiteInfo.from_model(site), base=base, shared=token is not None, **kwargs)
        if token is not None:
            response = sharing.frame_for(request, response, options)
        if (
            token is not None
            and cacheable
            and response.status_code == 200
            and not response.streaming
            and not response.cookies
        ):
            cache.set(_share_cache_key(request, options), response, settings.SHARE_CACHE_SECONDS)
        return response

    return wrapper


def _locked(request, token: str, site, error: str = "", status: int = 401, form: bool = False):
    """A password-protected link's answer without its cookie: the password form on its
    page, a bare 401 for its data endpoints."""
    if not form and request.path.rstrip("/") != reverse("dashboard:shared", args=[token]).rstrip("/"):
        return JsonResponse({"error": "this share link needs its password"}, status=401)
    page = render(
        request, "dashboard/share_password.html", {"site": site, "token": token, "error": error}, status=status
    )
    return sharing.frame_for(request, page, access.share_options(token))  # (an embedded link asks in its frame)


@require_POST
def unlock_share(request, token: str):
    """The password form's answer: right, a cookie and the dashboard; wrong, the form again
    (each try counts against the client's share-link rate, as page loads do)."""
    refused = share_throttled(request)
    if refused is not None:
        return refused
    site = access.site_for_share_token(token)
    segment = access.segment_for_share_token(token) if site is None else None
    site = site or (segment.site if segment is not None else None)
    options = access.share_options(token)
    if site is None or options is None:
        raise Http404("no such link")
    response = HttpResponseRedirect(reverse("dashboard:shared", args=[token]))
    if sharing.unlock(response, token, options, request.POST.get("password", "")):
        return response
    return _locked(request, token, site, "That is not the password.", status=403, form=True)


def _with_segment(params, segment_filters: str):
    """The query with a segment's filters first, then any the URL adds (the segment's own
    are never left out: its link shows that audience only; its chips offer no removal)."""
    params = params.copy()
    own = segments_parse(segment_filters)
    params["locked"] = ";".join(str(f) for f in own)
    try:
        extra = [f for f in segments_parse(params.get("filters", "")) if f not in own]
    except ValueError:
        extra = []
    params["filters"] = ";".join(str(f) for f in (*own, *extra))
    return params


UNCACHED = {"realtime"}  # (share-link answers cached a minute, but the live counter's)


def _share_cache_key(request, options=None) -> str:
    """A share-link answer is the same for everyone for a minute: one per URL (path and
    query) and per state of the link's options (embedding changes its headers: a changed
    option is a new key, not a minute of the old headers), so a hammered public link
    costs its queries once a minute."""
    state = "" if options is None else f"{options.pk}:{options.embed}:{options.origins}:{options.password}"
    return "share:" + hashlib.blake2b(f"{request.get_full_path()}\x1f{state}".encode(), digest_size=16).hexdigest()


def _live_url(request, site, shared: bool) -> str:
    """The live stream of this page: a share link's own (a segment's link streams ticks
    without everyone's count), else the signed-in user's."""
    path = (
        reverse("dashboard:live-shared", args=[request.share_token])
        if shared
        else reverse("dashboard:live", args=[site.domain])
    )
    return live_origin(request) + path


@site_view
def site(request, site, info, base, shared):
    today = info.today()
    period = _period(request, info)
    r = get_redis()
    snippet = tracking_snippet(request, site.domain)
    if not queries.has_events(r, info):  # one clear state, not empty axes and a grid of 0%
        context = {
            "site": site,
            "info": info,
            "snippet": snippet,
            "event_url": request.build_absolute_uri(reverse("event")),
        }
        return render(request, "dashboard/waiting.html", context)
    view = filtering.parse(request.GET, period.query)
    if period.key == "realtime":
        return _realtime_page(request, site, info, base, shared, period, view, today)
    menu_error = ""
    if "fprop" in request.GET:  # (the filter menu's answer: to the page's own URL with it)
        query, menu_error = filtering.from_menu(request.GET, view)
        if query:
            return HttpResponseRedirect(request.path + "?" + query)
    chart = _chart(period, view)
    rights = _rights(request, site, shared)
    notes = _annotations(request, site, period, shared, rights)
    numbers = _numbers(r, info, site, period, view, chart)
    charts.annotate(numbers["figures"]["visitors"], notes, chart["interval"])
    totals, pages = numbers["totals"], numbers["pages"]
    funnels = []
    for found in site.funnels.all():
        steps, estimate = queries.funnel(r, info, found, period.start, period.end, view.filters)
        key = f"funnel-{found.pk}"
        numbers["figures"][key] = charts.funnel(steps)
        funnels.append({"name": found.name, "chart": f"chart-{key}", "estimate": estimate, "steps": steps})
    comparable = queries.comparable_metrics(info, view.compare, period.start, period.end)
    cards = [
        _card(key, label, totals[key], key in comparable)
        for key, label in CARDS
        if not (key == "new_visitors" and totals[key]["value"] is None)
    ]
    pageviews = totals["pageviews"]
    return render(
        request,
        "dashboard/site.html",
        {
            "site": site,
            "info": info,
            "period": period,
            "choices": periods.CHOICES,
            "picker": _picker(period, view, today),
            "chart": chart,
            "notes": notes,
            "note_error": "annotation_error" in request.GET,
            "rights": rights,
            "back": "?" + view.query(),
            "menu": {
                **(
                    filtering.menu_state(request.GET, view)
                    if not menu_error
                    else {
                        "open": True,
                        "replace": request.GET.get("freplace", ""),
                        "prop": request.GET.get("fprop", ""),
                        "op": request.GET.get("fop", ""),
                        "value": request.GET.get("fvalue", ""),
                    }
                ),
                "error": menu_error,
                "properties": filtering.menu_properties(
                    queries.property_names(r, info, period.start, period.end), view
                ),
                "keep": parse_qsl(view.query()),  # (the page's period, filters, chart: the menu's hidden fields)
                "segments": _segments(request, site, base, view, shared, rights),
                "can_save": rights["edit"],
                "save_url": f"{base}segments",
                "back": "?" + view.query(),
                "segment_error": "segment_error" in request.GET,
                "tests": filtering.TESTS,
            },
            "cards": cards,
            "pages": pages,
            "figures": numbers["figures"],
            "actives_note": numbers["actives_note"],
            "goals": numbers["goals"],
            "properties": numbers["properties"],
            "panels": _panels(numbers["first"], base, view),
            "view": view,
            "estimate": numbers["estimate"],
            "imported": numbers["imported"],
            "dropped": numbers["dropped"] if not shared else None,  # (the owner's view of the filters)
            "funnels": funnels,
            "compared": queries.previous(view.compare, period.start, period.end),
            "compared_text": _compared_text(info, period, view),
            "topojson_url": topojson_folder(),
            "has_data": bool(
                totals["visitors"]["value"] or pageviews["value"] or pageviews["change"] is not None or pages
            ),  # (under filters whose pageviews are unknown, null, the visitors say there was traffic)
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


def _realtime_numbers(info, view: filtering.View) -> dict:
    """The realtime view's numbers, its rows named as the panels name them (countries),
    each a link that adds its filter."""
    numbers = queries.realtime_view(get_redis(), info, datetime.now(UTC), view.filters)
    numbers["panels"] = {
        key: [
            {"name": panels.label(key, row[key]), "visitors": row["visitors"], "href": "?" + view.adding(key, row[key])}
            for row in rows
        ]
        for key, rows in numbers["panels"].items()
    }
    return numbers


def _realtime_page(request, site, info, base, shared, period, view, today):
    """The realtime view: the last 30 minutes, by the minute, and the pages, sources,
    countries and devices of the visitors in them; it follows the live stream (a tick
    refetches `realtime?view=1`), no reload."""
    numbers = _realtime_numbers(info, view)
    return render(
        request,
        "dashboard/realtime.html",
        {
            "site": site,
            "info": info,
            "period": period,
            "view": view,
            "picker": _picker(period, view, today),
            "numbers": numbers,
            "shared": shared,
            "base": base,
            "live_url": _live_url(request, site, shared),
            "realtime_panels": REALTIME_PANELS,
        },
    )


def _compared_text(info, period: periods.Period, view: filtering.View) -> str:
    """The dates the cards' changes compare with, as the active choice names them: today
    is set against yesterday up to this hour (queries.aggregate())."""
    start, end = queries.previous(view.compare, period.start, period.end)
    if view.compare == "previous_period" and period.start == period.end == info.today():
        return f"yesterday until {datetime.now(info.tz).hour + 1:02d}:00"
    if start == end:
        return date_format(start, "j M Y")
    return f"{date_format(start, 'j M Y')} – {date_format(end, 'j M Y')}"


def _period(request, info) -> periods.Period:
    """The period the request asks for ("all time" from the site's first counted day)."""
    first = queries.first_counted_day(info) if request.GET.get("period") == "all" else None
    return periods.parse(request.GET, info.today(), first)


def _picker(period: periods.Period, view: filtering.View, today) -> dict:
    """The period picker's links, each keeping the view's filters and comparison: the
    presets (with their keyboard shortcuts) and the periods before and after this one."""

    def href(query: str) -> str:
        return "?" + view.with_period(query).query()

    before, after = period.step(-1, today), period.step(1, today)
    return {
        "presets": [
            {"label": label, "shortcut": shortcut, "href": href(f"period={key}"), "active": key == period.key}
            for key, label, shortcut in periods.PRESETS
            if key != "custom"
        ],
        "previous": href(before.query) if before else "",
        "next": href(after.query) if after else "",
    }


def _numbers(r, info, site, period, view, chart) -> dict:
    """Everything the site page shows, for the view's audience (analytics.queries.run):
    with filters, visitor numbers exact (or marked estimated), counts where one filter
    says them, panel rows with visitors only."""
    start, end, filters, memo = period.start, period.end, view.filters, queries.Memo()

    def ask(kind: str, first=start, last=end, **kwargs) -> queries.Result:
        return queries.run(r, queries.Query(info, first, last, kind, filters=filters, **kwargs), memo)

    daily = ask("timeseries")
    totals = ask("aggregate", metrics=tuple(key for key, _ in CARDS), compare=view.compare)
    estimate = daily.estimate or totals.estimate
    # Actives are per day: a day or two would be a dot, and a filtered view's under 30
    # days too; those show the 30 days to the period's end.
    wide = period.days < 30 if filters else period.days <= queries.MAX_HOUR_DAYS
    active_rows = ask("timeseries", end - timedelta(days=29), end).rows if wide else daily.rows
    # Cohorts of the 30 days (12 weeks) up to the period's end, whatever its length: a
    # short period would leave a heatmap of one cell.
    retention = {}
    for unit, first_cohort, n in (("day", end - timedelta(days=29), 30), ("week", end - timedelta(weeks=11), 12)):
        found = None if info.daily_salt else ask("retention", first_cohort, end, interval=unit, periods=n)
        retention[unit] = found.rows if found else []
        estimate = estimate or bool(found and found.estimate and filters)
    first = {}  # the first tab of each panel, in the first HTML
    for key in ("channel", "page", "country", "browser"):
        limit = panels.MAP_ROWS if key == "country" else panels.PANEL_ROWS
        rows, _, estimated = panels.fetch(r, info, start, end, panels.PROPERTIES[key], filters, limit=limit, memo=memo)
        estimate = estimate or estimated
        first[key] = rows
    countries = first["country"]
    first["country"] = countries[: panels.PANEL_ROWS]
    goals = ask("breakdown", dimension="goal", limit=10_000)
    estimate = estimate or goals.estimate
    properties: dict[str, list[dict]] = {}
    if not filters:  # (custom properties are counted for everyone: no filtered rows)
        everyone = totals.totals["visitors"]["value"] or 0
        for name, values in queries.every_property(r, info, start, end, PROPERTY_ROWS).items():
            properties[name] = [
                {
                    **row,
                    "conversion_rate": round(100 * row["visitors"] / everyone, 2) if everyone else 0.0,
                    "href": "?" + view.adding(f"{CUSTOM}{name}", row[name]),
                }
                for row in values
            ]
        events = {g.name: g.event_name for g in site.goals.all() if g.event_name}
        for goal in goals.rows:
            if goal["goal"] in events:
                goal["properties"] = queries.event_properties(r, info, start, end, events[goal["goal"]])
    interval, metric = chart["interval"], chart["metric"]
    series = _series(ask, interval, metric, daily.rows)
    compared = _compared_rows(r, info, period, view, interval, metric, memo)
    estimate = estimate or any(row.get("estimate") for row in series)
    main = charts.visitors(series, interval, metric, compared, view.compare_label)
    main["links"] = [_zoom(row["date"], interval, view, info.today()) for row in series]
    world = charts.world_map(countries)
    world["links"] = ["?" + view.adding("country", row["country"]) for row in countries if row["country"] in COUNTRIES]
    for goal in goals.rows:
        goal["href"] = "?" + view.adding("goal", goal["goal"])
    figures = {
        "visitors": main,
        "actives": charts.actives(active_rows),
        "retention-day": charts.retention(retention["day"], "day"),
        "retention-week": charts.retention(retention["week"], "week"),
        "map": world,
    }
    pages = (
        first["page"]
        if not filters
        else [{"page": row["page"], "visitors": row["visitors"], "pageviews": None} for row in first["page"]]
    )
    return {
        "totals": totals.totals,
        "pages": pages,
        "figures": figures,
        "first": first,
        "goals": goals.rows,
        "properties": properties,
        "actives_note": "last 30 days" if wide else "",
        "estimate": estimate,
        "imported": totals.meta.get("imported"),  # (days of another product's daily totals: the page says so)
        "dropped": None if filters else _dropped(ask("dropped").totals),  # (dropped events have no audience)
    }


def _dropped(totals: dict[str, int]) -> dict | None:
    """The period's events not counted, for the line under the cards: the filters seen
    working (and which to switch off, on the settings' Advanced page, if one misfires)."""
    reasons = [{"count": n, "label": LABELS.get(reason, reason)} for reason, n in totals.items() if n]
    return {"total": sum(totals.values()), "reasons": reasons} if reasons else None


def _chart(period: periods.Period, view: filtering.View) -> dict:
    """The main chart's interval and metric, and the links to the others: by the hour for
    a day or two (without filters: they count visitors by day), by the day up to 92 days,
    else by the month, unless another is chosen; by week from two weeks, by month from 45
    days. The metric is a card's, chosen by clicking it."""
    metric = view.metric or "visitors"
    hour = period.days <= queries.MAX_HOUR_DAYS and not view.filters and metric in queries.HOUR_METRICS
    available = [
        key
        for key, shown in (("hour", hour), ("day", True), ("week", period.days >= 14), ("month", period.days >= 45))
        if shown
    ]
    default = "hour" if hour else "day" if period.days <= 92 else "month"
    interval = view.interval if view.interval in available else default
    return {
        "interval": interval,
        "metric": metric,
        "intervals": [
            {
                "key": key,
                "label": key.capitalize(),
                "href": "?" + view.charting(interval=key),
                "active": key == interval,
            }
            for key in available
        ],
        "metric_hrefs": {
            key: "?" + view.charting(metric="" if key == "visitors" else key) for key in filtering.CHART_METRICS
        },
    }


def _series(ask, interval: str, metric: str, daily: list[dict]) -> list[dict]:
    """The main chart's rows: visitors and pageviews, or the metric chosen, by the interval."""
    wanted = ("visitors", "pageviews") if metric == "visitors" else (metric,)
    if interval == "day" and metric == "visitors":
        return daily  # (the days counted for the cards already)
    return ask("timeseries", interval=interval, metrics=wanted).rows


def _compared_rows(r, info, period, view, interval: str, metric: str, memo=None) -> list[dict]:
    """The compared period's rows (the view's comparison, its filters), for the chart."""
    start, end = queries.previous(view.compare, period.start, period.end)
    wanted = ("visitors",) if metric == "visitors" else (metric,)
    query = queries.Query(
        info, start, end, "timeseries", wanted, filters=view.filters, interval=interval, windows=False
    )
    return queries.run(r, query, memo).rows


def _zoom(day: str, interval: str, view: filtering.View, today) -> str:
    """Where a click on the chart's point for `day` goes: that day (by the hour), week or
    month; nowhere from an hour."""
    if interval == "hour":
        return ""
    first = date.fromisoformat(day)
    if interval == "day":
        last = first
    elif interval == "week":
        last = first + timedelta(days=6)
    else:
        last = (first + timedelta(days=31)).replace(day=1) - timedelta(days=1)
    last = min(last, today)
    return "?" + view.with_period(f"period=custom&from={first.isoformat()}&to={last.isoformat()}").query()


def _card(key: str, label: str, total: dict, comparable: bool) -> dict:
    """A card: its value, its change in percent, and whether that change is good news
    (a bounce rate going down is); "new" where the period compared with had none of it."""
    change = total.get("change")
    return {
        "key": key,
        "label": label,
        "value": total["value"],
        "change": change,
        "good": None if not change else (change < 0) == (key in LOWER_IS_BETTER),
        "new": comparable and change is None and bool(total["value"]),
        "estimate": total.get("estimate", ""),  # (why this number is an estimate, and by how much; "" when exact)
    }


def _panels(first: dict, base: str, view) -> list[dict]:
    """The panels for the template, with the rows of each first tab."""
    shown = []
    for key, title, tabs in panels.PANELS:
        shown.append(
            {
                "key": key,
                "title": title,
                "tabs": [
                    {
                        "key": tab.key,
                        "label": tab.label,
                        "choices": tab.choices,
                        "prop": tab.choices[0] if tab.choices else None,
                        "rows": panels.panel_rows(tab.choices[0], first[tab.key], view) if tab.key in first else None,
                        "details": details_url(base, tab.choices[0].key, view) if tab.choices else "",
                        "active": n == 0,
                    }
                    for n, tab in enumerate(tabs)
                ],
            }
        )
    return shown


def details_url(base: str, prop: str, view) -> str:
    return f"{base}pages?{view.query()}" if prop == "page" else f"{base}details/{prop}?{view.query()}"


def topojson_folder() -> str:
    """The folder plotly.js fetches the map's outlines from (it appends world_110m.json).
    The collected static files keep every file under its plain name beside the hashed
    copy, so the folder of the hashed URL serves the plain name too."""
    return static(charts.TOPOJSON).rsplit("/", 1)[0] + "/"


@site_view
def breakdown(request, site, info, base, shared):
    """A panel tab's list: ?property=<dimension or page>&period=..."""
    asked = request.GET.get("property", "")
    if asked.startswith(CUSTOM):  # (a custom property's values: the filter menu's suggestions)
        period = _period(request, info)
        rows, _ = queries.properties(get_redis(), info, period.start, period.end, asked[len(CUSTOM) :], limit=50)
        return JsonResponse({"property": asked, "rows": [{"value": row[asked[len(CUSTOM) :]]} for row in rows]})
    prop = panels.PROPERTIES.get(asked)
    if prop is None:
        return JsonResponse({"error": f"property must be one of {', '.join(panels.PROPERTIES)}"}, status=400)
    period = _period(request, info)
    view = filtering.parse(request.GET, period.query)
    tab, prop = prop, panels.drilled(prop, view.filters)
    r = get_redis()
    rows, total, estimate = panels.fetch(r, info, period.start, period.end, prop, view.filters)
    return JsonResponse(
        {
            "property": tab.key,  # (the tab's, which the page matches the answer to)
            "listed": prop.key,  # (what the rows are: a source's referrers under a filter to it)
            "column": prop.column,
            "metric": prop.metric,
            "path": prop.path,
            "rows": panels.panel_rows(prop, rows, view),
            "empty": panels.empty_note(r, info, period.start, period.end, prop, total, shared),
            "total": total,
            "estimate": estimate,
            "details": details_url(base, tab.key, view),
        }
    )


@site_view
def search(request, site, info, base, shared):
    prefix = request.GET.get("q", "")[:200]
    return JsonResponse({"pages": queries.search_pages(get_redis(), info, prefix, limit=10)})


@site_view
def page(request, site, info, base, shared):
    path = request.GET.get("path", "")[:1024]
    period = _period(request, info)
    rows = queries.page_timeseries(get_redis(), info, path, period.start, period.end)
    return JsonResponse({"path": path, "figure": charts.page(rows, path)})


@site_view
def realtime(request, site, info, base, shared):
    """The polling fallback of the live counter; with `view=1`, the realtime view's numbers
    (queries.realtime_view), which the realtime page fetches at each tick of the stream."""
    view = filtering.parse(request.GET, "period=realtime")  # (a segment link's filters among them: site_view)
    if request.GET.get("view"):
        return JsonResponse(_realtime_numbers(info, view))
    return JsonResponse({"visitors": queries.realtime_now(get_redis(), info, datetime.now(UTC), view.filters)})


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
    return JsonResponse(
        {"user": user, "pages": recommendations.unseen_top_pages(get_redis(), info, user, 10, 7, touch=False)}
    )


@site_view
def recommendations_page(request, site, info, base, shared):
    """Recommendations for one visitor and the Bloom filters behind them: an engineer's
    page, apart from the readers' dashboard; per-person, so never through a share link."""
    if shared:
        raise Http404("not shared")
    return render(request, "dashboard/recommendations.html", {"site": site, "base": base})


@site_view
def filters(request, site, info, base, shared):
    """The site's Bloom filters: how many, their memory, fill and expected error."""
    if shared:
        raise Http404("not shared")
    return JsonResponse(recommendations.filter_stats(get_redis(), info))


@require_POST
@site_view
@roles.requires(Role.EDITOR)
def save_segment(request, site, info, base, shared):
    """Save the page's filters as a segment (POST name, filters, shared; CSRF): private
    to the user, or shared with everyone who may see the site. Back to the page with it."""
    name = request.POST.get("name", "").strip()[:120]
    back = request.POST.get("back", "")
    back = back if back.startswith("?") else "?"
    try:
        filters = segments_parse(request.POST.get("filters", ""))
    except ValueError:
        filters = ()
    if not name or not filters:
        return HttpResponseRedirect(base + back + "&segment_error=1")
    segment = Segment.objects.create(
        site=site,
        name=name,
        filters=";".join(str(f) for f in filters),
        owner=request.user,
        shared=request.POST.get("shared") == "on",
    )
    audit.record(site, request.user, "segment.saved", f"{segment.name}: {segment.filters}")
    return HttpResponseRedirect(base + back)


@require_POST
@site_view
@roles.requires(Role.EDITOR)
def change_segment(request, site, info, base, shared, segment_id, action):
    """Delete a segment (its owner, or an admin), or make or end its share link (an
    admin's: share links are)."""
    if action not in ("delete", "share", "unshare"):
        raise Http404("no such action")
    segment = access.visible_segments(request.user, site).filter(pk=segment_id).first()
    admin = roles.may(request.user, site, Role.ADMIN)
    if segment is None or not (segment.owner_id == request.user.pk or admin):
        raise Http404("no such segment")
    if action != "delete" and not admin:
        raise PermissionDenied(f"Share links take the admin role on {site.domain}.")
    if action == "delete":
        segment.delete()
    elif action == "share":
        segment.share()
    else:
        segment.unshare()
    audit.record(site, request.user, f"segment.{action}d" if action != "share" else "segment.shared", segment.name)
    back = request.POST.get("back", "")
    return HttpResponseRedirect(base + (back if back.startswith("?") else ""))


@require_POST
@site_view
@roles.requires(Role.EDITOR)
def annotate(request, site, info, base, shared):
    """Add a note to the site's timeline (POST date[, end], text[, public]; CSRF): an
    editor's or more; it shows to everyone who may see the site."""
    back = request.POST.get("back", "")
    back = back if back.startswith("?") else "?"
    text = request.POST.get("text", "").strip()[:200]
    day: date | None
    end: date | None
    try:
        day = date.fromisoformat(request.POST.get("date", ""))
        end = date.fromisoformat(request.POST["end"]) if request.POST.get("end") else None
    except ValueError:
        day = end = None
    if not text or day is None or (end is not None and end < day):
        return HttpResponseRedirect(base + back + "&annotation_error=1")
    Annotation.objects.create(
        site=site, date=day, end=end if end != day else None, text=text, public=request.POST.get("public") == "on",
        author=request.user,
    )  # fmt: skip
    audit.record(site, request.user, "note.added", f"{day.isoformat()}: {text}")
    return HttpResponseRedirect(base + back)


@require_POST
@site_view
@roles.requires(Role.EDITOR)
def unannotate(request, site, info, base, shared, annotation_id):
    """Delete a note: its author's, or an admin's."""
    note = Annotation.objects.filter(site=site, pk=annotation_id).first()
    if note is None or not (note.author_id == request.user.pk or roles.may(request.user, site, Role.ADMIN)):
        raise Http404("no such note")
    note.delete()
    audit.record(site, request.user, "note.deleted", f"{note.date.isoformat()}: {note.text}")
    back = request.POST.get("back", "")
    return HttpResponseRedirect(base + (back if back.startswith("?") else ""))


def _rights(request, site, shared: bool) -> dict:
    """What the page offers its reader to change (team.roles; each view checks again)."""
    if shared:
        return {"edit": False, "admin": False}
    return {"edit": roles.may(request.user, site, Role.EDITOR), "admin": roles.may(request.user, site, Role.ADMIN)}


def _annotations(request, site, period, shared, rights: dict) -> list[dict]:
    """The notes that touch the period (a share link's: the public ones)."""
    notes = site.annotations.filter(date__lte=period.end).filter(
        Q(end__gte=period.start) | Q(end__isnull=True, date__gte=period.start)
    )
    if shared:
        notes = notes.filter(public=True)
    return [
        {
            "id": note.pk,
            "date": note.date,
            "end": note.end,
            "text": note.text,
            "public": note.public,
            "mine": rights["edit"] and (note.author_id == request.user.pk or rights["admin"]),
        }
        for note in notes.order_by("date", "pk")[:100]
    ]


def _segments(request, site, base, view, shared, rights: dict) -> list[dict]:
    """The segments the filter menu offers: each applies its filters over this period."""
    if shared:
        return []
    found = []
    for segment in access.visible_segments(request.user, site).select_related("owner"):
        try:
            filters = segments_parse(segment.filters)
        except ValueError:
            continue  # (a rule changed since it was saved: not offered)
        found.append(
            {
                "id": segment.pk,
                "name": segment.name,
                "href": "?" + view.query(filters),
                "shared": segment.shared,
                "mine": rights["edit"] and (segment.owner_id == request.user.pk or rights["admin"]),
                "can_share": rights["admin"],
                "active": tuple(filters) == tuple(view.filters),
                "link": request.build_absolute_uri(reverse("dashboard:shared", args=[segment.share_token]))
                if segment.share_token
                else "",
            }
        )
    return found


@site_view
def pages(request, site, info, base, shared):
    """Every page of the period, most visitors first, 50 at a time, with a search (paths
    containing the text). Ranked as the top-pages card ranks (the read API's numbers)."""
    return _details(request, site, info, base, panels.PROPERTIES["page"], shared)


@site_view
def details(request, site, info, base, shared, prop):
    """Every value of a panel's property (a visit dimension), most visitors first, 50 at a
    time, with a search (values containing the text)."""
    if prop not in panels.PROPERTIES or prop == "page":
        raise Http404("no such property")
    drilled = panels.drilled(panels.PROPERTIES[prop], filtering.parse(request.GET, "").filters)
    return _details(request, site, info, base, drilled, shared)


def _details(request, site, info, base, prop, shared):
    period = _period(request, info)
    view = filtering.parse(request.GET, period.query)
    search = request.GET.get("q", "").strip()[:200]
    try:
        number = max(1, int(request.GET.get("page", "1")))
    except ValueError:
        number = 1
    r = get_redis()

    def fetch(page):
        rows, total, _ = panels.fetch(
            r, info, period.start, period.end, prop, view.filters, panels.DETAILS_ROWS, page, search
        )
        return rows, total

    rows, total = fetch(number)
    last = max(1, -(-total // panels.DETAILS_ROWS))
    if number > last:  # past the end: the last page
        number = last
        rows, total = fetch(number)
    columns, shown = panels.details_table(
        prop, rows, filtered=bool(view.filters), link=lambda value: base + "?" + view.adding(prop.key, value)
    )
    context = {
        "site": site,
        "info": info,
        "period": period,
        "view": view,
        "base": base,
        "prop": prop,
        "columns": columns,
        "rows": shown,
        "search": search,
        "number": number,
        "last": last,
        "total": total,
        "first_rank": (number - 1) * panels.DETAILS_ROWS + 1,
        "empty": "" if search else panels.empty_note(r, info, period.start, period.end, prop, total, shared),
    }
    return render(request, "dashboard/details.html", context)
