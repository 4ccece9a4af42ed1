"""What the engine needs to know of a site, looked up cheaply on the hot path.

Ingestion resolves a domain or an API key on every request; a database query each time
would cost more than the Redis writes. So each process keeps the answers for a short
while (CACHE_SECONDS): a new site or a revoked key takes effect within that time. A key's
`last_used` (shown in the admin) is written when it authenticates, at most once per
LAST_USED_EVERY per process, compared with the value the cache holds: no write per request.
"""

import logging
import time
import zoneinfo
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

from django.db import DatabaseError, transaction
from django.utils import timezone

from . import hooks
from .models import ApiKey, DailyMetrics, Exclusion, Site, hash_api_key

log = logging.getLogger(__name__)

CACHE_SECONDS = 30
LAST_USED_EVERY = timedelta(minutes=5)


@dataclass(frozen=True)
class SiteInfo:
    id: int
    domain: str
    tz: zoneinfo.ZoneInfo
    daily_salt: bool
    salt: bytes
    realtime_ttl: int = 1800  # seconds the per-minute realtime HLLs live
    bloom: object = None  # the recommendations app's filter settings (hooks.site_loaded; None without the app)
    rate_per_minute: int = 0  # events a minute the site accepts (0: no limit)
    max_pages_per_day: int = 10_000  # quotas: past them, names count under "(other)"
    max_event_names_per_day: int = 1_000
    max_property_values: int = 1_000
    max_property_names: int = 100  # property names an event may have a day (past them: the event's "(other)" property)
    max_property_groups: int = 20_000  # properties and kept values a day, all events together
    segment_values: int = 10  # values per dimension a day with a visitor bitmap (exact filters)
    keep_page_days: int = 35  # day page HLLs live this long after the rollup; older ranges read week/month HLLs
    keep_daily_days: int = 400  # raw day keys live this long after the rollup; then the stored rows are the record
    keep_segment_days: int = 90  # filter bitmaps live this long after the rollup
    keep_page_period_days: int = 400  # week and month page HLLs live this long after their period
    # ((kind, value), ...): traffic the site does not count (ingest/exclusions.py); read by
    # the loaders ingest asks (site_for_domain, site_for_api_key), not by every from_model()
    exclusions: tuple = ()
    drop_referrer_spam: bool = True  # referrer spam (ingest/bots.py) dropped as bots
    drop_crawlers: bool = True  # crawlers' User-Agents (ingest/bots.py) dropped
    drop_datacenters: bool = True  # cloud and hosting providers' addresses (ingest/datacenters.py) dropped
    pattern_pageviews: int = 300  # a visitor past this many pageviews in 10 minutes: dropped for the day (0: never)

    @classmethod
    def from_model(cls, site: Site) -> "SiteInfo":
        return cls(
            id=site.pk,
            domain=site.domain,
            tz=zoneinfo.ZoneInfo(site.timezone),
            daily_salt=site.identity_mode == Site.IdentityMode.DAILY,
            salt=bytes.fromhex(site.salt),
            realtime_ttl=site.keep_realtime_minutes * 60,
            bloom=hooks.registered.site_loaded(site),
            rate_per_minute=site.ingest_rate_per_minute,
            max_pages_per_day=site.max_pages_per_day,
            max_event_names_per_day=site.max_event_names_per_day,
            max_property_values=site.max_property_values,
            max_property_names=site.max_property_names,
            max_property_groups=site.max_property_groups,
            keep_daily_days=site.keep_daily_days,
            segment_values=site.segment_values,
            keep_page_days=site.keep_page_days,
            keep_segment_days=site.keep_segment_days,
            keep_page_period_days=site.keep_page_period_days,
            drop_referrer_spam=site.drop_referrer_spam,
            drop_crawlers=site.drop_crawlers,
            drop_datacenters=site.drop_datacenters,
            pattern_pageviews=site.pattern_pageviews,
        )

    def never_drops(self) -> "SiteInfo":
        """The site with every bot check off (the batch API's `bots=keep`: the sender
        knows its traffic); its own exclusions still apply."""
        return replace(self, drop_referrer_spam=False, drop_crawlers=False, drop_datacenters=False, pattern_pageviews=0)

    def today(self) -> date:
        return datetime.now(self.tz).date()

    def oldest_day(self) -> date:
        """The oldest day whose raw keys the expiry policy surely keeps (older days are
        read from their stored rows)."""
        return self.today() - timedelta(days=self.keep_daily_days - 1)


def sealed_days(site, days, pages: bool = False, ahead: timedelta = timedelta(0)) -> set[date]:
    """The days among these whose raw keys (with `pages`, their page keys) have expired
    after their rollup stored them (or will within `ahead`): their rows are the record, and
    events for them can no longer be added (their new keys would hold them alone;
    analytics.rollups.expiry). `site`: a Site or a SiteInfo (both name the policy's days)."""
    now = datetime.now(UTC) + ahead
    rows = DailyMetrics.objects.filter(site_id=site.id if isinstance(site, SiteInfo) else site.pk, date__in=set(days))
    return {row.date for row in rows if row.sealed(site, now)[1 if pages else 0]}


REFUSE_AHEAD = timedelta(minutes=10)


def refused_days(site, days) -> set[date]:
    """The days among these that ingest refuses: sealed (sealed_days()), or whose raw keys
    expire within REFUSE_AHEAD. An event checked just before the expiry and written just
    after it would make new keys on a sealed day, which no rollup reads again (its rows are
    the record): acknowledged and never counted. With the margin, an accepted event's write
    has minutes to land, not the milliseconds between the check and the script."""
    return sealed_days(site, days, ahead=REFUSE_AHEAD)


def sealed_reason(day: date) -> str:
    return (
        f"ts: {day} was rolled up and its raw keys have expired since, or expire within minutes (the site's "
        "keep_daily_days): "
        "its stored numbers are final and events can no longer be added to it"
    )


@dataclass
class _Key:
    """An API key as the cache holds it: its site, and when it was last used."""

    site: SiteInfo
    key_id: int
    last_used: datetime | None  # as stored when loaded, or as this process last wrote it


_by_domain: dict[str, tuple[float, SiteInfo | None]] = {}
_by_key: dict[str, tuple[float, _Key | None]] = {}


def _cached(cache, token, load):
    now = time.monotonic()
    hit = cache.get(token)
    if hit is not None and hit[0] > now:
        return hit[1]
    value = load()
    if len(cache) > 10_000:  # bounded: unknown tokens from the public must not grow it forever
        cache.clear()
    cache[token] = (now + CACHE_SECONDS, value)
    return value


def _for_ingest(site: Site) -> SiteInfo:
    """A site's settings with its exclusions: what ingest checks an event against."""
    return replace(SiteInfo.from_model(site), exclusions=tuple(site.exclusions.values_list("kind", "value")))


def site_for_domain(domain: str) -> SiteInfo | None:
    domain = domain.strip().lower()

    def load():
        site = Site.objects.filter(domain=domain).first()
        return _for_ingest(site) if site else None

    return _cached(_by_domain, domain, load)


def site_for_api_key(key: str) -> SiteInfo | None:
    """The site of an API key, or None; notes the key's use (see _note_use)."""
    digest = hash_api_key(key)

    def load():
        api_key = ApiKey.objects.select_related("site").filter(key_hash=digest).first()
        return _Key(_for_ingest(api_key.site), api_key.pk, api_key.last_used) if api_key else None

    found = _cached(_by_key, digest, load)
    if found is None:
        return None
    _note_use(found)
    return found.site


def _note_use(found: _Key):
    """Write the key's last_used when the value this process knows is LAST_USED_EVERY old:
    one UPDATE per key and process every few minutes (two threads may both write: the same
    value, near enough). A cache reload reads what other processes wrote. A database that
    refuses the write (SQLite busy) fails no request: the next try comes with the next
    reload of the cache."""
    now = timezone.now()
    if found.last_used is not None and now - found.last_used < LAST_USED_EVERY:
        return
    found.last_used = now
    try:
        with transaction.atomic():  # (a savepoint when a caller's transaction is open: its failure stays here)
            ApiKey.objects.filter(pk=found.key_id).update(
                last_used=now
            )  # (update(): no post_save, which clears the caches)
    except DatabaseError as e:
        log.warning("last_used of API key %s not written: %s", found.key_id, e)


def clear_cache():
    _by_domain.clear()
    _by_key.clear()


def _forget(**kwargs):
    clear_cache()


def connect_signals():
    """Changes made in this process (admin, tests) show at once, not after CACHE_SECONDS."""
    from django.db.models.signals import post_delete, post_save

    for model in (Site, ApiKey, Exclusion):
        post_save.connect(_forget, sender=model, dispatch_uid=f"tally-sites-{model.__name__}-save")
        post_delete.connect(_forget, sender=model, dispatch_uid=f"tally-sites-{model.__name__}-del")


def tracking_snippet(request, domain: str) -> str:
    """The <script> tag a site pastes into its pages: the tracker at its stable address,
    /static/tracker.js, served with a short max-age so that an update reaches every site;
    not the hashed copy {% static %} names, cached for ten years and gone after a rebuild.
    (Shown as text: the templates escape it.)"""
    from django.conf import settings

    tracker = request.build_absolute_uri(settings.STATIC_URL + "tracker.js")
    return f'<script defer data-domain="{domain}" src="{tracker}"></script>'
