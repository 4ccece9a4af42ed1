"""Sites and their API keys: the relational side of Tally (the counting lives in Redis)."""

import hashlib
import re
import secrets
import zoneinfo
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from . import hooks
from .periods import policy_expiry

API_KEY_PREFIX = "tly_"


def validate_timezone(value):
    if value not in zoneinfo.available_timezones():
        raise ValidationError(f"unknown time zone: {value}")


def new_salt():
    return secrets.token_hex(32)


domain_validator = RegexValidator(
    r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:\d{1,5})?$",
    "Enter a lower-case host name such as example.com (no scheme, no path).",
)


class Site(models.Model):
    class IdentityMode(models.TextChoices):
        STABLE = "stable", "Stable salt: visitors recognised across days (retention works)"
        DAILY = "daily", "Daily-rotating salt: strict privacy, unique visitors per day only"

    domain = models.CharField(max_length=253, unique=True, validators=[domain_validator])
    timezone = models.CharField(max_length=64, default="UTC", validators=[validate_timezone])
    identity_mode = models.CharField(max_length=10, choices=IdentityMode.choices, default=IdentityMode.STABLE)
    # The secret key of the keyed hash that turns IP + User-Agent (or an id) into a visitor
    # digest. Never shown; rotating it starts every visitor afresh.
    salt = models.CharField(max_length=64, default=new_salt, editable=False)
    created = models.DateTimeField(auto_now_add=True)
    share_token = models.CharField(
        max_length=64,
        null=True,
        blank=True,
        unique=True,
        editable=False,
        help_text="Anyone with the share link sees this site's dashboard, read-only.",
    )

    # Key expiry policy: raw Redis keys live this long; the rollup rows are kept for good.
    # Days' keys get their TTL only once the day's rollup is stored (see analytics.rollups).
    keep_realtime_minutes = models.PositiveIntegerField(
        "keep realtime HLLs (minutes)",
        default=30,
        validators=[MinValueValidator(5)],
        help_text="per-minute realtime HLLs: the realtime count reads the last 5 minutes, the realtime "
        "view's chart up to 30 (a busy minute's HLL is 12 KB)",
    )
    keep_page_days = models.PositiveIntegerField(
        default=35,
        validators=[MinValueValidator(1)],
        help_text="daily page HLLs and page counters, after the day is rolled up "
        "(older days: stored rows and week/month HLLs)",
    )
    keep_page_period_days = models.PositiveIntegerField(
        "keep page week/month HLLs (days)",
        default=400,
        validators=[MinValueValidator(1)],
        help_text="the rollups' week and month page HLLs, which page unions over older ranges read",
    )
    keep_daily_days = models.PositiveIntegerField(
        default=400,
        validators=[MinValueValidator(1)],
        help_text="daily bitmaps and site HLLs, after the day is rolled up",
    )
    keep_segment_days = models.PositiveIntegerField(
        "keep filter bitmaps (days)",
        default=90,
        validators=[MinValueValidator(1)],
        help_text="the per-value visitor bitmaps that make filters exact (each up to visitors-ever / 8 bytes a day); "
        "filters on older days are estimated from HLLs",
    )

    # Recommendation dedup: each visitor's scalable Bloom filter of seen pages and items.
    bloom_capacity = models.PositiveIntegerField(
        "Bloom capacity",
        default=1000,
        validators=[MinValueValidator(1)],
        help_text="items a visitor's first sub-filter holds",
    )
    bloom_error_rate = models.FloatField(
        "Bloom error rate",
        default=0.01,
        validators=[MinValueValidator(1e-9), MaxValueValidator(0.5)],
        help_text="target false-positive rate, all sub-filters together",
    )
    bloom_expansion = models.PositiveIntegerField(
        "Bloom expansion",
        default=2,
        validators=[MinValueValidator(1), MaxValueValidator(16)],
        help_text="each new sub-filter holds this many times the previous one",
    )
    max_pages_per_day = models.PositiveIntegerField(
        "distinct pages a day",
        default=10_000,
        validators=[MinValueValidator(1)],
        help_text="pages past this many in a day are counted under (other)",
    )
    max_event_names_per_day = models.PositiveIntegerField(
        "distinct custom events a day",
        default=1_000,
        validators=[MinValueValidator(1)],
        help_text="custom event names past this many in a day are counted under (other)",
    )
    max_property_values = models.PositiveIntegerField(
        "values per property a day",
        default=1_000,
        validators=[MinValueValidator(1)],
        help_text="values of one custom property past this many in a day are counted under (other)",
    )
    max_property_names = models.PositiveIntegerField(
        "properties per custom event a day",
        default=100,
        validators=[MinValueValidator(1)],
        help_text="property names of one custom event past this many in a day are counted under its (other) property",
    )
    max_property_groups = models.PositiveIntegerField(
        "properties and values a day",
        default=20_000,
        validators=[MinValueValidator(1)],
        help_text="all custom events' properties and kept values together in a day; past it, new ones count under "
        "(other): what random property names and values can cost a day is bounded",
    )
    segment_values = models.PositiveIntegerField(
        "exact filter values a day",
        default=10,
        validators=[MaxValueValidator(1000)],
        help_text="per dimension (source, country, page...), the first values of each day get a visitor bitmap: "
        "filters on them count visitors exactly; others are estimated. "
        "Each costs up to (visitors ever seen) / 8 bytes a day",
    )
    drop_referrer_spam = models.BooleanField(
        default=True,
        help_text="drop events whose referrer is on Matomo's referrer spam list (analytics/ingest/data/referrer-spam/)",
    )
    drop_crawlers = models.BooleanField(
        default=True,
        help_text="drop events whose User-Agent is a crawler's (crawlerdetect and the crawler-user-agents list)",
    )
    drop_datacenters = models.BooleanField(
        default=True,
        help_text="drop events from cloud and hosting providers' addresses (analytics/ingest/data/datacenters/)",
    )
    pattern_pageviews = models.PositiveIntegerField(
        "inhuman rate",
        default=300,
        help_text="a visitor with more pageviews than this in 10 minutes is flagged as a bot for the rest of the "
        "day: their further events are dropped; 0: never",
    )
    ingest_rate_per_minute = models.PositiveIntegerField(
        "ingest rate limit",
        default=0,
        help_text="events a minute the site accepts, a minute's worth at once; 0: no limit",
    )
    bloom_nonscaling = models.BooleanField(
        "Bloom non-scaling", default=False, help_text="refuse items past capacity instead of growing"
    )
    bloom_idle_days = models.PositiveIntegerField(
        "Bloom idle expiry (days)",
        default=180,
        validators=[MinValueValidator(1)],
        help_text="a filter unused this long expires",
    )
    bloom_max_memory_mb = models.PositiveIntegerField(
        "Bloom memory budget (MB)",
        default=256,  # (recommendations.bloom.DEFAULT_BUDGET_MB)
        validators=[MinValueValidator(1), MaxValueValidator(1024 * 1024)],
        help_text="all the site's filters together; at the budget, visitors without a filter get none and full filters "
        "do not grow (their page views still count), until filters expire",
    )

    class Meta:
        ordering = ["domain"]

    def __str__(self):
        return self.domain

    def save(self, *args, **kwargs):
        self.domain = self.domain.strip().lower()
        super().save(*args, **kwargs)

    def clean(self):
        """What an app refuses of its settings on the row (hooks.site_cleaned: the
        recommendations app, Bloom settings whose first sub-filter passes the size limit)."""
        problems = hooks.registered.site_cleaned(self)
        if problems:
            raise ValidationError(problems)

    def enable_sharing(self) -> str:
        """A new unguessable public read-only link token (replacing any old one, and its
        options: ShareLinkOptions)."""
        self.revoke_sharing()
        self.share_token = secrets.token_urlsafe(24)
        self.save(update_fields=["share_token"])
        return self.share_token

    def revoke_sharing(self):
        if self.share_token:
            ShareLinkOptions.objects.filter(token=self.share_token).delete()
        self.share_token = None
        self.save(update_fields=["share_token"])

    def create_api_key(self, name=""):
        """Make a new key and return it in clear text: the only time anyone sees it."""
        return ApiKey.create(self, name)


def hash_api_key(key: str) -> str:
    # Keys are 256-bit random tokens, so a fast hash is enough: nothing to brute-force.
    return hashlib.sha256(key.encode()).hexdigest()


class ApiKey(models.Model):
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, editable=False, help_text="First characters, to tell keys apart")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "API key"

    def __str__(self):
        return f"{self.prefix}… ({self.site})"

    @classmethod
    def create(cls, site, name=""):
        key = API_KEY_PREFIX + secrets.token_urlsafe(32)
        cls.objects.create(site=site, name=name, prefix=key[:10], key_hash=hash_api_key(key))
        return key


class DailyMetrics(models.Model):
    """One site-day's finished numbers, written by the rollups (upserts: re-running a rollup
    rewrites the same row). `final` once the day is over in the site's time zone."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="daily_metrics")
    date = models.DateField()
    visitors = models.PositiveIntegerField(default=0)
    pageviews = models.PositiveBigIntegerField(default=0)
    dau = models.PositiveIntegerField(default=0)
    new_visitors = models.PositiveIntegerField(null=True)
    wau = models.PositiveIntegerField(default=0)
    mau = models.PositiveIntegerField(default=0)
    final = models.BooleanField(default=False)
    updated = models.DateTimeField(auto_now=True)
    # The events not counted that day, by reason (analytics/dropped.py), kept past the day's keys
    dropped = models.JSONField(default=dict, blank=True)
    # When the day's raw keys expire, as analytics.rollups.expiry set them (None: not set
    # yet, or set before this was recorded: then the policy's rule, expiry.keys_until()).
    page_keys_until = models.DateTimeField(
        null=True, blank=True, help_text="when the day's page keys (index, HLLs, counters) expire"
    )
    keys_until = models.DateTimeField(
        null=True, blank=True, help_text="when the day's other raw keys expire: from then on its rows are the record"
    )
    segment_keys_until = models.DateTimeField(null=True, blank=True, help_text="when the day's filter bitmaps expire")
    # Whether the day's HLLs were kept as sketches (DaySketch) before its keys expired:
    # its pages' (page family), and the site's, events' and visit values' (the rest).
    pages_sketched = models.BooleanField(default=False)
    daily_sketched = models.BooleanField(default=False)
    page_merge_token = models.CharField(
        max_length=32, blank=True, default="", help_text="the last page merge added (rollups.expiry)"
    )
    # A day whose rows came from another product's daily totals (Plausible's CSV export,
    # analytics.imports.plausible), not from events: sealed from the start, its visitors
    # over several days a sum (the totals cannot tell one person on two days).
    imported = models.ForeignKey(
        "ImportedLog", null=True, blank=True, on_delete=models.CASCADE, related_name="days", editable=False
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "date"], name="daily_metrics_site_date")]
        verbose_name_plural = "daily metrics"

    @property
    def stickiness(self):
        return round(self.dau / self.mau, 4) if self.mau else 0.0

    def sealed(self, site: "Site", now: datetime) -> tuple[bool, bool]:
        """(the day's raw keys, its page keys) have expired after its rollup: its rows are
        then the record. A row whose expiry is not recorded yet goes by the policy, if it
        was stored before the policy's time (a row from before the expiries were recorded:
        its keys went then); one stored after it (rolled up late: history) is not sealed
        until its rollup records when its keys go."""
        daily = self.keys_until or self._by_policy(site.keep_daily_days)
        page = self.page_keys_until or self._by_policy(site.keep_page_days)
        return (daily is not None and daily <= now), (page is not None and page <= now)

    def segments_sealed(self, site: "Site", now: datetime) -> bool:
        """Have the day's filter bitmaps expired after its rollup? (A bitmap there now was
        made by late events: it holds them alone.)"""
        until = self.segment_keys_until or self._by_policy(min(site.keep_segment_days, site.keep_daily_days))
        return until is not None and until <= now

    def _by_policy(self, keep_days: int) -> datetime | None:
        at = policy_expiry(self.date, keep_days)
        return at if self.final and self.updated is not None and self.updated < at else None


class PeriodVisitors(models.Model):
    """Unique visitors of a week (ISO, starting Monday) or a calendar month, from PFMERGE."""

    class Unit(models.TextChoices):
        WEEK = "week"
        MONTH = "month"

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="period_visitors")
    unit = models.CharField(max_length=5, choices=Unit.choices)
    start = models.DateField()
    visitors = models.PositiveIntegerField(default=0)
    final = models.BooleanField(default=False)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "unit", "start"], name="period_visitors_unique")]


class Retention(models.Model):
    """A cohort (visitors new on a day, or in an ISO week) and how many of it came back:
    retained[n] = active on cohort + n days (weeks); retained[0] == size."""

    class Unit(models.TextChoices):
        DAY = "day"
        WEEK = "week"

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="retention")
    unit = models.CharField(max_length=4, choices=Unit.choices)
    cohort = models.DateField()
    size = models.PositiveIntegerField(default=0)
    retained = models.JSONField(default=list)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "unit", "cohort"], name="retention_unique")]


class PageDaily(models.Model):
    """A page's numbers on one day, stored by the rollups so that ranking pages over a
    long period is one indexed query instead of thousands of Redis reads."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="page_daily")
    date = models.DateField()
    path = models.CharField(max_length=1024)
    visitors = models.PositiveIntegerField(default=0)
    pageviews = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "date", "path"], name="page_daily_unique")]
        indexes = [models.Index(fields=["site", "date"], name="page_daily_site_date")]


class PagePeriod(models.Model):
    """A page's visitors over an ISO week or a calendar month, stored by the rollups once
    the period has ended (PFCOUNT of its merged HLL): what a page's union over long-past
    history is counted from once those HLLs expire (keep_page_period_days)."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="page_periods")
    unit = models.CharField(max_length=5, choices=PeriodVisitors.Unit.choices)
    start = models.DateField()
    path = models.CharField(max_length=1024)
    visitors = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "unit", "start", "path"], name="page_period_unique")]
        indexes = [models.Index(fields=["site", "path", "unit", "start"], name="page_period_lookup")]


class Goal(models.Model):
    """What counts as a conversion: a custom event by name, or a pageview of a path pattern
    (`*` matches within one path segment, `**` across segments: `/blog/*`, `/docs/**`).
    Conversion rate = unique converters / unique visitors over the same range."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="goals")
    name = models.CharField(
        max_length=120, blank=True, help_text="shown on the dashboard; defaults to the event name or the pattern"
    )
    event_name = models.CharField(max_length=120, blank=True, help_text="a custom event's name, e.g. Signup")
    page_pattern = models.CharField(max_length=1024, blank=True, help_text="a path pattern, e.g. /blog/* or /docs/**")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "name"], name="goal_unique_name")]
        ordering = ["name"]

    def __str__(self):
        return self.name

    def clean(self):
        if bool(self.event_name) == bool(self.page_pattern):
            raise ValidationError("give either an event name or a page pattern, not both")
        if self.page_pattern and not self.page_pattern.startswith("/"):
            raise ValidationError({"page_pattern": "a path pattern starts with /, e.g. /blog/*"})
        if not self.name:
            self.name = self.event_name or f"Visit {self.page_pattern}"

    def matches(self, path: str) -> bool:
        return bool(self.page_pattern) and page_pattern_regex(self.page_pattern).fullmatch(path)


class Funnel(models.Model):
    """An ordered list of 2-8 steps, each a page (a path, or a pattern as goals have:
    /blog/*) or a custom event (`event:Signup`). A visitor reaches step k when they did it
    on a day of the range no earlier than the first day they reached step k-1 (days, not
    moments: two steps on the same day count in either order; analytics.queries.funnels)."""

    MIN_STEPS, MAX_STEPS = 2, 8
    EVENT = "event:"

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="funnels")
    name = models.CharField(max_length=120)
    steps = models.TextField(
        help_text="one step a line: a page path or pattern (/pricing, /blog/*) or event:Name (event:Signup)"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "name"], name="funnel_unique_name")]
        ordering = ["name"]

    def __str__(self):
        return self.name

    def step_list(self) -> list[tuple[str, str]]:
        """[("page", "/pricing"), ("event", "Signup"), ...] in order."""
        found = []
        for line in self.steps.splitlines():
            line = line.strip()
            if line.startswith(self.EVENT):
                found.append(("event", line[len(self.EVENT) :].strip()))
            elif line:
                found.append(("page", line))
        return found

    def clean(self):
        steps = self.step_list()
        if not self.MIN_STEPS <= len(steps) <= self.MAX_STEPS:
            raise ValidationError({"steps": f"a funnel has {self.MIN_STEPS} to {self.MAX_STEPS} steps, one a line"})
        for kind, value in steps:
            if kind == "page" and not value.startswith("/"):
                raise ValidationError(
                    {"steps": f"{value[:60]!r}: a page step starts with /, an event step with event:"}
                )
            if not value or len(value) > 1024:
                raise ValidationError({"steps": "a step is empty or too long"})


def page_pattern_regex(pattern: str):
    """A matcher for a page pattern: `**` any characters, `*` any but `/`, everything
    else literal. Its `fullmatch(path)` does not backtrack across `**`: the pattern is cut
    at its `**`s and each piece found once, leftmost first (a single regex with `.*` in
    it backtracks: "/**a**a**a**b" took minutes on a 1,000-character path)."""
    return _PageMatcher(pattern)


class _PageMatcher:
    def __init__(self, pattern: str):
        while "***" in pattern:
            pattern = pattern.replace("***", "**")
        pieces = [re.escape(piece).replace(r"\*", "[^/]*?") for piece in pattern.split("**")]
        self.whole = re.compile(pieces[0]) if len(pieces) == 1 else None
        self.pieces = [re.compile(piece) for piece in pieces]
        self.last = re.compile(f"(?:{pieces[-1]})\\Z")

    def fullmatch(self, path: str) -> bool:
        if self.whole is not None:
            return self.whole.fullmatch(path) is not None
        head = self.pieces[0].match(path)  # the shortest first piece leaves the most room
        if head is None:
            return False
        at = head.end()
        for piece in self.pieces[1:-1]:  # each as early as it can be, for the same reason
            found = piece.search(path, at)
            if found is None:
                return False
            at = found.end()
        return self.last.search(path, at) is not None  # the last piece ends the path


class DaySketch(models.Model):
    """A day's HyperLogLog of visitors, as the rollup found it before the day's raw keys
    expired: the site's (field ""), each page's, custom event's and visit value's (`field`
    as analytics.dimensions.field() writes it), zlib-compressed. Kept for good, beside the
    day's counts: a union over days whose keys expired, or filters combined on such a day,
    is then counted from these (PFCOUNT of the sketches set back into scratch keys:
    queries/expired.py), an estimate within an HLL's error, not a guess from the counts."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="day_sketches")
    date = models.DateField()
    # The field, hashed (field_key()): page paths run to 1,024 characters, past what a
    # unique index holds on PostgreSQL.
    key = models.CharField(max_length=32)
    field = models.TextField()
    sketch = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "date", "key"], name="day_sketch_unique")]

    @staticmethod
    def field_key(field: str) -> str:
        return hashlib.blake2b(field.encode(), digest_size=16).hexdigest()


class DimensionDaily(models.Model):
    """A visit dimension value's numbers on one day (a source, a country, an entry page...),
    stored by the rollups so that breakdowns over long periods are one indexed query.
    Visits, bounces and duration count visits that started that day; for exit_page,
    `visits` are the visits that ended there. The row ("total", "all") holds the site's
    visit totals."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="dimension_daily")
    date = models.DateField()
    dimension = models.CharField(max_length=32)
    value = models.CharField(max_length=1024)
    visitors = models.PositiveIntegerField(default=0)
    pageviews = models.PositiveBigIntegerField(default=0)
    visits = models.PositiveBigIntegerField(default=0)
    bounces = models.PositiveBigIntegerField(default=0)
    duration = models.PositiveBigIntegerField(default=0, help_text="seconds, summed over the visits")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["site", "date", "dimension", "value"], name="dimension_daily_unique")
        ]
        indexes = [models.Index(fields=["site", "dimension", "date"], name="dimension_daily_lookup")]


class EventDaily(models.Model):
    """A custom event's numbers on one day (what event goals convert on), and, when
    `property` is set, one value of one of its properties: stored by the rollups so goals
    and property breakdowns keep their counts once the day's raw keys expire."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="event_daily")
    date = models.DateField()
    name = models.CharField(max_length=255)
    property = models.CharField(max_length=300, blank=True, default="")
    value = models.TextField(blank=True, default="")
    # The row's identity, hashed (name, property, value): values run to 2,000 characters,
    # past what a unique index holds on PostgreSQL.
    group = models.CharField(max_length=32)
    visitors = models.PositiveIntegerField(default=0)
    events = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "date", "group"], name="event_daily_unique")]
        indexes = [models.Index(fields=["site", "name", "date"], name="event_daily_lookup")]

    @staticmethod
    def group_of(name: str, prop: str = "", value: str = "") -> str:
        return hashlib.blake2b(f"{name}\x1f{prop}\x1f{value}".encode(), digest_size=16).hexdigest()

    @classmethod
    def of(cls, site: Site, day, group: tuple[str, str, str], visitors: int, events: int) -> "EventDaily":
        """The row of a day's (name, property, value) group, its identity hashed."""
        name, prop, value = group
        return cls(
            site=site,
            date=day,
            name=name,
            property=prop,
            value=value,
            group=cls.group_of(name, prop, value),
            visitors=visitors,
            events=events,
        )


class ImportedLog(models.Model):
    """A file already imported into a site (an access log, a GA4 or Umami export, a
    Plausible CSV export), by content hash: importing it again would count its visits
    twice, so `manage.py import` (and `import_log`) refuses. Written once the whole file
    is counted: a run that crashed before leaves none, and running it again resumes
    (analytics.imports.replay). A Plausible export's days point at it (DailyMetrics.imported)."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="imported_logs")
    sha256 = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, default="log")  # analytics.imports.READERS: log, ga4, umami...
    name = models.CharField(max_length=500)
    lines = models.PositiveBigIntegerField(default=0)
    imported = models.PositiveBigIntegerField(default=0)
    first_day = models.DateField(null=True, blank=True)  # the local days it counted (None: none, or not recorded)
    last_day = models.DateField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "sha256"], name="imported_log_unique")]


class ImportJob(models.Model):
    """An import started from a site's Imports page in the admin and run by a Celery worker
    (analytics.tasks.run_import): the page answers at once, however long the files take.
    The uploads wait under VAR_DIR/imports/<job id>/ with names of ours (`paths`); the
    names their sender gave are kept for display only (`names`: from the public, escape
    them). They are deleted once the job has run, whatever its outcome."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="import_jobs")
    kind = models.CharField(max_length=16)  # analytics.imports.run.KINDS
    names = models.JSONField(default=list)
    paths = models.JSONField(default=list)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    lines = models.JSONField(default=list)  # the import's summary lines, as they come
    error = models.TextField(blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self):
        return f"{self.kind} import #{self.pk} of {self.site_id}"

    @property
    def active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    def folder(self):
        """Where this job's uploads wait: a folder of its own, named by its id (the VAR_DIR a
        Celery worker on the same host shares with the web processes)."""
        return settings.VAR_DIR / "imports" / str(self.pk)

    def say(self, line: str):
        """One more summary line, saved at once (the page shows a running job's lines) and by
        id: a job whose site was deleted meanwhile is simply gone."""
        self.lines = [*self.lines, line]
        ImportJob.objects.filter(pk=self.pk).update(lines=self.lines)


class Segment(models.Model):
    """A named set of filters (the read API's syntax, analytics.queries.segments) saved on a
    site's dashboard: private to whoever saved it, or shared with everyone who may see the
    site. With a share token, a read-only link to the site that shows only this audience
    (dashboard.views.site_view forces its filters on every answer of that link)."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="segments")
    name = models.CharField(max_length=120)
    filters = models.TextField(help_text="e.g. source==Google;country!=DE")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="segments"
    )
    shared = models.BooleanField(default=False, help_text="shown to everyone who may see the site")
    share_token = models.CharField(max_length=64, unique=True, null=True, blank=True, editable=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "pk"]

    def __str__(self):
        return f"{self.name} ({self.filters})"

    def share(self) -> str:
        self.unshare()
        self.share_token = secrets.token_urlsafe(24)
        self.save(update_fields=["share_token"])
        return self.share_token

    def unshare(self):
        if self.share_token:
            ShareLinkOptions.objects.filter(token=self.share_token).delete()
        self.share_token = None
        self.save(update_fields=["share_token"])


class Exclusion(models.Model):
    """Traffic a site does not count: from an IP address or network (`ip`: 203.0.113.7,
    2001:db8::/32), on a path pattern (`path`: /admin/**, as goals match pages), or on a
    host (`host`: staging.example.com). Checked at ingest (analytics/ingest/exclusions.py)."""

    class Kind(models.TextChoices):
        IP = "ip", "IP address or network"
        PATH = "path", "Path pattern"
        HOST = "host", "Hostname"

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="exclusions")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    value = models.CharField(max_length=300)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "kind", "value"], name="exclusion_unique")]
        ordering = ["kind", "value"]

    def __str__(self):
        return f"{self.get_kind_display()} {self.value}"

    def clean(self):
        import ipaddress

        self.value = self.value.strip()
        if self.kind == self.Kind.IP:
            try:
                self.value = str(ipaddress.ip_network(self.value, strict=False))
            except ValueError:
                raise ValidationError(
                    {"value": "an IP address or network, e.g. 203.0.113.7 or 2001:db8::/32"}
                ) from None
        elif self.kind == self.Kind.PATH and not self.value.startswith("/"):
            raise ValidationError({"value": "a path pattern starts with /, e.g. /admin/**"})
        elif self.kind == self.Kind.HOST:
            self.value = self.value.lower().removeprefix("www.")
            if not self.value or "/" in self.value or " " in self.value:
                raise ValidationError({"value": "a host name, e.g. staging.example.com"})


class ShareLinkOptions(models.Model):
    """What protects a share link (the site's, or a segment's: its token): a password
    (hashed; a signed cookie once entered), embedding in other sites' frames (only from the
    origins listed), and a last day. A link without a row has none of them."""

    token = models.CharField(max_length=64, unique=True)
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="share_options")
    password = models.CharField(max_length=128, blank=True, help_text="a password hash (django.contrib.auth)")
    embed = models.BooleanField(default=False, help_text="may be shown in an <iframe> of the origins listed")
    origins = models.TextField(blank=True, help_text="origins that may embed it, one per line (https://example.com)")
    expires = models.DateField(null=True, blank=True, help_text="the last day the link works")

    class Meta:
        verbose_name = "share link options"
        verbose_name_plural = "share link options"

    def __str__(self):
        return f"options of a share link of {self.site}"

    @property
    def origin_list(self) -> list[str]:
        return [line.strip() for line in self.origins.splitlines() if line.strip()]


class Annotation(models.Model):
    """A note on a site's timeline ("launched the pricing page", "outage"): a day, or a
    range of days, drawn on the dashboard's main chart for everyone who may see the site,
    and on its share links when `public`."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="annotations")
    date = models.DateField(help_text="the day it marks (the site's local day)")
    end = models.DateField(null=True, blank=True, help_text="its last day, for a range")
    text = models.CharField(max_length=200)
    public = models.BooleanField(default=False, help_text="also shown on the site's share links")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="annotations"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["date", "pk"]
        indexes = [models.Index(fields=["site", "date"], name="annotation_site_date")]

    def __str__(self):
        return f"{self.date}: {self.text}"
