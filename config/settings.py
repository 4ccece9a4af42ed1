"""Tally's settings, read from the environment with production-safe defaults.

Every knob is an environment variable parsed by a small helper that fails loudly on a bad
value. Nothing secret lives in this file: `SECRET_KEY` comes from the environment or is
generated once into `./var/secret_key`.
"""

import ipaddress
import os
import secrets
from pathlib import Path

import dj_database_url
import dj_email_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TALLY_VAR_DIR", BASE_DIR / "var"))  # (the database, keys, spool, embedded Redis)


def envbool(name, default):
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {value!r}")


def envint(name, default):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None


def envfloat(name, default):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None


def envlist(name, default):
    value = os.environ.get(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def _secret_key():
    """The SECRET_KEY from the environment, else one generated once and kept in ./var/."""
    if os.environ.get("SECRET_KEY"):
        return os.environ["SECRET_KEY"]
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


def _redis_url():
    """REDIS_URL, else the embedded Redis that `make run` recorded in ./var/redis.url."""
    if os.environ.get("REDIS_URL"):
        return os.environ["REDIS_URL"]
    recorded = VAR_DIR / "redis.url"
    if recorded.exists():
        return recorded.read_text().strip()
    return "redis://127.0.0.1:6379/0"


def _networks(name, default):
    try:
        return [ipaddress.ip_network(item, strict=False) for item in envlist(name, default)]
    except ValueError as e:
        raise ImproperlyConfigured(f"{name}: {e}") from None


SECRET_KEY = _secret_key()
DEBUG = envbool("DEBUG", False)  # (Django's debug pages: never on a public server)
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])  # (comma-separated host names served)
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])  # (https://origins forms may post from, behind a proxy)

# Proxies whose X-Forwarded-For we believe (IPs or CIDRs). Empty: the socket address is the
# client, and X-Forwarded-For is ignored, so nobody can forge their visitor identity.
TRUSTED_PROXIES = _networks("TRUSTED_PROXIES", [])

REDIS_URL = _redis_url()
# A Redis Cluster for Tally's data (any node's address); then REDIS_URL serves only as
# Celery's broker (a broker cannot be a cluster). analytics/store/cluster.py.
REDIS_CLUSTER_URL = os.environ.get("REDIS_CLUSTER_URL", "")

# The live dashboard stream (server-sent events) is served by a separate ASGI server on
# LIVE_PORT (make run starts it on PORT + 1). Behind a proxy, LIVE_URL is its public base
# URL, e.g. https://tally.example.net (route /live/ there).
LIVE_PORT = envint("LIVE_PORT", envint("PORT", 8000) + 1)
LIVE_URL = os.environ.get("LIVE_URL", "")

# Where people reach this Tally, for the links in emails and printed by commands
# (invitations, reports, alerts), e.g. https://tally.example.net.
BASE_URL = os.environ.get("BASE_URL", f"http://127.0.0.1:{envint('PORT', 8000)}").rstrip("/")

# Outgoing mail (invitations, reports, alerts): an SMTP URL such as
# smtp://user:pass@smtp.example.net:587/?tls=true (dj-email-url). Unset: mails are written
# to the log (console backend), and pages show the links they would carry.
EMAIL_URL = os.environ.get("EMAIL_URL", "")
# The sender of Tally's mails.
DEFAULT_FROM_EMAIL = os.environ.get("EMAIL_FROM", "Tally <tally@localhost>")
if EMAIL_URL:
    vars().update(dj_email_url.parse(EMAIL_URL))
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
EMAIL_TIMEOUT = 20
# Alert webhooks may reach private, loopback and link-local addresses (a receiver on the
# same network); off by default, so that a site's admin cannot reach the server's own.
ALERT_WEBHOOKS_PRIVATE = envbool("ALERT_WEBHOOKS_PRIVATE", False)

# Celery: Redis is the broker too. The schedule lives in config/celery.py.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "config.apps.TallyStaticFilesConfig",  # (django.contrib.staticfiles, leaving out vendor/build)
    "analytics",
    "recommendations",  # (Bloom filters beside the engine: registers its hooks, analytics/hooks.py)
    "dashboard",
    "team",  # (members and roles, invitations, the audit log, the settings pages)
]

MIDDLEWARE = [
    "server.middleware.UntrustedProxyHeadersMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "server.middleware.ContentSecurityPolicyMiddleware",
    "server.middleware.PrivateCacheMiddleware",
    "server.middleware.StorageOutageMiddleware",
]

# The ingestion endpoints run with just this (see config/wsgi.py): no sessions, no CSRF.
INGEST_MIDDLEWARE = ["django.middleware.security.SecurityMiddleware"]
SECURE_REFERRER_POLICY = "same-origin"

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        # (a database URL: SQLite under var/ by default, postgres://... for PostgreSQL)
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'tally.sqlite3'}"),
        conn_max_age=600,
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Tests use a file, not memory, so a real Celery worker process can share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
    # Web, worker and beat write concurrently: wait for SQLite's lock instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    # Write-ahead log: readers never wait for a rollup's writes, and a commit syncs the log
    # at checkpoints, not each time (a rollup's 340 commits spent 0.9 s in fsync otherwise).
    DATABASES["default"]["OPTIONS"]["init_command"] = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:home"

# Single sign-on (OpenID Connect, team/sso.py): the provider's issuer URL (its endpoints
# come from its discovery document) and this client's id and secret there.
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "").rstrip("/")
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
# The id token's signing algorithm the provider uses.
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = "openid email profile"
OIDC_AUTHENTICATE_CLASS = "team.sso.AuthenticateView"
OIDC_USE_PKCE = True
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
# With SSO set up: true leaves only the SSO button on the login page (no passwords).
SSO_ONLY = envbool("SSO_ONLY", False)
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"] + (["team.sso.Backend"] if OIDC_ISSUER else [])
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files go out gzip-compressed under content-hashed names cached for a year
# (`collectstatic`, which `make run` and the test session run, writes both; the vendored
# Plotly bundle, the four traces the dashboard draws, is 1.4 MB raw and 0.5 MB gzipped, where
# the full plotly.min.js was 4.8 MB and 1.4 MB). The plain names stay beside the hashed ones
# (plotly.js asks for the map's outlines by a plain name). With DEBUG, files are served from
# the source folders.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", False)  # (served over HTTPS: cookies only over it)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Served over HTTPS (SECURE_COOKIES on): browsers are told to stay on HTTPS (HSTS, a year
# by default) and plain-HTTP pages redirect. The proxy's X-Forwarded-Proto says whether a
# request came over HTTPS, believed only from TRUSTED_PROXIES (server/middleware.py strips
# it from everyone else, so no client can claim HTTPS).
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 365 * 86400 if SESSION_COOKIE_SECURE else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", SESSION_COOKIE_SECURE)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", SESSION_COOKIE_SECURE)  # (listing is still up to you)
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", SESSION_COOKIE_SECURE)
SECURE_REDIRECT_EXEMPT = [r"^api/"]  # trackers and servers post over whatever the site uses
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if TRUSTED_PROXIES else None
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# Ingestion limits (bytes). A Plausible-style single event is tiny; a batch holds up to
# MAX_BATCH_EVENTS events of a few hundred bytes each.
MAX_EVENT_BODY = envint("TALLY_MAX_EVENT_BODY", 64 * 1024)
MAX_BATCH_BODY = envint("TALLY_MAX_BATCH_BODY", 16 * 1024 * 1024)
MAX_BATCH_EVENTS = envint("TALLY_MAX_BATCH_EVENTS", 10_000)

# Ingest rate limit per client IP and site (events a minute, and how many at once); 0: off.
RATE_LIMIT_PER_IP = envint("RATE_LIMIT_PER_IP", 600)
RATE_LIMIT_PER_IP_BURST = envint("RATE_LIMIT_PER_IP_BURST", 100)
# Failed logins: per account and per client IP, in 15 minutes.
LOGIN_FAILURES_PER_ACCOUNT = envint("LOGIN_FAILURES_PER_ACCOUNT", 10)
# Share-link pages a client (IP) may load a minute, and at once: a public link must not
# starve other sites' reads (each page is a dozen queries; answers are cached a minute).
SHARE_PAGES_PER_MINUTE = envint("SHARE_PAGES_PER_MINUTE", 120)
SHARE_PAGES_BURST = envint("SHARE_PAGES_BURST", 60)
SHARE_CACHE_SECONDS = envint("SHARE_CACHE_SECONDS", 60)
# Pages one share link may compute a minute (cache misses), across every client: many
# clients (or one behind many addresses) varying the URL each time get 429s past it.
SHARE_RENDERS_PER_MINUTE = envint("SHARE_RENDERS_PER_MINUTE", 30)
SHARE_RENDERS_BURST = envint("SHARE_RENDERS_BURST", 10)
# Bytes a site's events may take in the ingest spool while Redis is out (then 503).
SPOOL_MAX_BYTES_PER_SITE = envint("TALLY_SPOOL_MAX_MB", 256) * 2**20
LOGIN_FAILURES_PER_IP = envint("LOGIN_FAILURES_PER_IP", 30)

# Page paths kept for the dashboard's prefix search, per site (the most visited stay).
PAGE_SEARCH_CAP = envint("TALLY_PAGE_SEARCH_CAP", 10_000)

# Seconds a Redis command may take before the client gives up (ingest then spools).
REDIS_SOCKET_TIMEOUT = envfloat("REDIS_SOCKET_TIMEOUT", 10.0)

# Ingest calls are marked as applied (exactly once across retries and spool replays) and
# the marks kept this long: longer than a spooled event may wait for Redis to come back.
INGEST_MARK_HOURS = envint("TALLY_INGEST_MARK_HOURS", 48)

# A day rolled up when its expiry policy has passed already (history imported or sent
# late) keeps its raw keys this long after its rollup, so that the rest of an import
# (the next log file, the next batch) still adds to it exactly. After that its stored
# rows are the record (analytics.rollups.expiry).
BACKFILL_GRACE_HOURS = envint("TALLY_BACKFILL_GRACE_HOURS", 48)

# Single events from the event front go through each site's inbox (analytics/ingest/
# inbox.py): acknowledged once pushed, counted in batches a few milliseconds later. Off
# ("0"), each group of them is counted before it is acknowledged.
INGEST_INBOX = envbool("TALLY_INGEST_INBOX", True)
# Who counts the inboxes: "thread", a thread in each web process, for what it pushed; or
# "process", `manage.py drain_inboxes` on its own (`make run` starts it, and sets this for
# its web workers: their event loop then never waits on a drain for the GIL).
INBOX_DRAINER = os.environ.get("TALLY_INBOX_DRAINER", "thread")
if INBOX_DRAINER not in ("thread", "process"):
    raise ImproperlyConfigured(f"TALLY_INBOX_DRAINER must be thread or process, got {INBOX_DRAINER!r}")

# Countries come from the IP-to-country data iptocc ships. For regions, cities and
# coordinates too: the path of a city database (.mmdb: MaxMind GeoLite2-City or DB-IP's
# IP to City Lite), opened memory-mapped on the first lookup. Empty: countries only.
GEO_CITY_DB = os.environ.get("TALLY_GEO_CITY_DB", "").strip()
if GEO_CITY_DB and not os.path.isfile(GEO_CITY_DB):
    raise ImproperlyConfigured(f"TALLY_GEO_CITY_DB must be the path of an .mmdb file, got {GEO_CITY_DB!r}")

# Large exports build in Celery, at most this many at once across all workers.
EXPORT_CONCURRENCY = envint("EXPORT_CONCURRENCY", 2)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_BATCH_BODY
# The largest history file the admin's Imports page takes (bytes), from a staff member
# only (server/front.py checks the session before it reads past MAX_BATCH_BODY), spooled
# to disk; larger ones: `manage.py import`.
IMPORT_UPLOAD_MAX_BYTES = envint("TALLY_IMPORT_UPLOAD_MAX_BYTES", 4 << 30)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"denied_without_traceback": {"()": "config.log_filters.DeniedWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["denied_without_traceback"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},  # (Python's level names)
}
