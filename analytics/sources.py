"""Where a visit came from: the referring host, a grouped source, a channel and the UTM tags.

Called once per pageview on the ingest path, so the work per event is one regular
expression on the referrer, a look at the page URL's query string (only when it has one)
and cached answers per referring host: about 2 µs a call for a host seen before, 10-20 µs
for a new one. The host lists are Matomo's searchengine-and-social-list
(CC0) with a few of our own (`ingest/data/referrers/`, see its README); they are read on first use,
never at import.

A referring host is matched as Matomo matches it: as given, then in Matomo's "lossy" form, in
which a leading www/search label and any `m.` label go, and a two-letter country TLD (with an
optional com/org/net/co/it/edu before it) becomes `{}`, as do two-letter country subdomains:
`google.co.uk` is `google.{}`, `de.search.yahoo.com` is `{}.search.yahoo.com`. Social
networks, AI assistants and webmail also match with subdomains dropped one by one
(`old.reddit.com` is reddit.com), search engines do not: Matomo lists the subdomains that
search (images.google.com), and docs.google.com is a referral. A few entries name a path
too (`x.com/i/grok` is Grok, while x.com is Twitter); those are checked against the
referrer's path.

The channel, first match wins:

    Paid            utm_medium is cpc, ppc, paid, paidsearch, paid_social, display, banner,
                    cpm, cpv, cpa or affiliate, or starts with "paid"
    Email           utm_medium or utm_source is email, e-mail, e_mail or newsletter, or the
                    source is a webmail host or app (mail.google.com, outlook.live.com, ...)
    AI Assistants   the source is an AI assistant (chatgpt.com, perplexity.ai, ...)
    Organic Search  the source is a search engine, or utm_medium is organic
    Organic Social  the source is a social network, or utm_medium is social, social-network,
                    social-media or sm
    Referral        any other referrer or utm_source, or utm_medium is referral
    Direct          none of these: no referrer (or only the site's own) and no utm_source

"The source" is utm_source when it names a known source (a name such as "google" or a host
such as "chatgpt.com", which ChatGPT adds to its links), else the referrer.
"""

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote_plus

DIRECT = "Direct / None"
CHANNELS = ("Direct", "Organic Search", "Organic Social", "Referral", "Email", "Paid", "AI Assistants")
MAX_TAG = 120
MAX_RAW_TAG = 12 * MAX_TAG  # a character is at most 12 characters percent-encoded (4 bytes of UTF-8)
DATA = Path(__file__).parent / "ingest" / "data" / "referrers"  # (vendored beside the ingest that first read them)


@dataclass(frozen=True, slots=True)
class Acquisition:
    referrer: str
    source: str
    channel: str
    utm_source: str | None
    utm_medium: str | None
    utm_campaign: str | None
    utm_term: str | None
    utm_content: str | None


PAID = frozenset(
    {"cpc", "ppc", "paid", "paidsearch", "paid_social", "display", "banner", "cpm", "cpv", "cpa", "affiliate"}
)
EMAIL = frozenset({"email", "e-mail", "e_mail", "newsletter"})
SOCIAL = frozenset({"social", "social-network", "social-media", "sm"})

# scheme (1), host (2) of at most 253 characters (DNS's limit), optional port; then the path,
# query, fragment or the end. A regex, not urlsplit: this runs per event. Browsers send no
# user info in a referrer, so a URL with some is not parsed (it counts as no referrer).
_REFERRER = re.compile(
    r"(https?|android-app)://(\[[0-9a-f:.]+\]|[^/?#:@\s\[\]]{1,253})(?::\d*)?(?=[/?#]|\Z)", re.IGNORECASE
)
_HOST = re.compile(r"[\w-]+(?:\.[\w-]+)*\Z")  # DNS labels, IDN in Unicode allowed
_TAGS = frozenset(("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "source", "ref"))
_NO_TAGS = (None, None, None, None, None)

# Matomo's getLossyUrl (its UrlHelper), in order; any two letters stand for a country here
# (every two-letter TLD is a country's).
_LOSSY = (
    (re.compile(r"^(?:w+[0-9]*|search)\."), ""),
    (re.compile(r"(^|\.)m\."), r"\1"),
    (re.compile(r"(?:\.(?:com|org|net|co|it|edu))?\.[a-z]{2}\Z"), ".{}"),
    (re.compile(r"(^|\.)[a-z]{2}\."), r"\1{}."),
)

_UNKNOWN = (None, None, ())


def acquisition(page_url: str, referrer: str | None, site_host: str) -> Acquisition:
    """Where the visit to `page_url` came from. Never raises on odd input: a referrer that is
    not an http(s) or android-app URL counts as none."""
    tags = _tags(page_url.partition("?")[2].partition("#")[0]) if "?" in page_url else _NO_TAGS
    host = name = kind = None
    if referrer and (match := _REFERRER.match(referrer)) and (host := _host(match[2])):
        if match[1].lower() == "android-app":
            name, kind = _app(host)
        elif (own := _site(site_host)) and (host == own or host.endswith("." + own)):
            host = None
        else:
            name, kind, paths = _known(host)
            if paths:
                name, kind = _by_path(paths, referrer[match.end() :], name, kind)
    return _answer(host, name, kind, *tags)


def referrer_host(referrer: str | None) -> str | None:
    """A referrer's host as acquisition() reads it (lower case, no "www."), or None for
    what is not an http(s) or android-app URL: referrer spam is looked up by it."""
    match = _REFERRER.match(referrer) if referrer else None
    return _host(match[2]) if match else None


def source_of_host(host: str) -> str:
    """The source a visit referred by this host (a referrer dimension's value) is named,
    untagged: "google.de" -> "Google". The dashboard's drill-down under a source lists the
    referrers that are that source's."""
    if not host or host == DIRECT:
        return DIRECT
    name, kind, _ = _known(host)
    return _answer(host, name, kind, None, None, None, None, None).source


def channel_of(source: str, utm_source: str | None = None, utm_medium: str | None = None) -> str:
    """The channel of a visit another product recorded by its source's name ("Google",
    "Direct / None") and tags, as a live visit from that source would get it (Plausible's
    CSV export has sources, not referrers: analytics.imports.plausible)."""
    direct = source == DIRECT or not source
    kind = None if direct else _named(source)[0]
    host = None if direct else source
    return _answer(
        host, None if direct else source, kind, utm_source or None, utm_medium or None, None, None, None
    ).channel


@lru_cache(maxsize=20_000)
def _answer(
    host: str | None,
    name: str | None,
    kind: str | None,
    utm_source: str | None,
    utm_medium: str | None,
    utm_campaign: str | None,
    utm_term: str | None,
    utm_content: str | None,
) -> Acquisition:
    """Cached: real traffic repeats a few referring hosts and tagged links over and over, and
    an Acquisition is immutable."""
    shown = utm_source
    if utm_source is not None:
        named_kind, shown = _named(utm_source)
        kind = named_kind or kind
    medium = utm_medium.lower() if utm_medium else ""
    tagged_source = utm_source.lower() if utm_source else ""
    if medium in PAID or medium.startswith("paid"):
        channel = "Paid"
    elif medium in EMAIL or tagged_source in EMAIL or kind == "email":
        channel = "Email"
    elif kind == "ai":
        channel = "AI Assistants"
    elif kind == "search" or medium == "organic":
        channel = "Organic Search"
    elif kind == "social" or medium in SOCIAL:
        channel = "Organic Social"
    elif host or utm_source or medium == "referral":
        channel = "Referral"
    else:
        channel = "Direct"
    source = shown or name or host or DIRECT
    return Acquisition(host or DIRECT, source, channel, utm_source, utm_medium, utm_campaign, utm_term, utm_content)


def _tags(query: str) -> tuple:
    """(utm_source, utm_medium, utm_campaign, utm_term, utm_content) from a query string; a
    `source` or else a `ref` parameter stands in for a missing utm_source, as in Plausible.
    The first non-empty value of a name wins."""
    if "utm_" not in query and "source=" not in query and "ref=" not in query:
        return _NO_TAGS
    found = {}
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key in _TAGS and value and key not in found and (value := _decode(value[:MAX_RAW_TAG])):
            found[key] = value
    get = found.get
    return (
        get("utm_source") or get("source") or get("ref"),
        get("utm_medium"),
        get("utm_campaign"),
        get("utm_term"),
        get("utm_content"),
    )


@lru_cache(maxsize=4096)
def _decode(value: str) -> str:
    """A tag's value: percent-decoded ("+" is a space), stripped, at most MAX_TAG characters."""
    if "%" in value or "+" in value:
        value = unquote_plus(value)
    return value.strip()[:MAX_TAG].rstrip()


@lru_cache(maxsize=20_000)
def _host(raw: str) -> str | None:
    """A referrer's host as we report it: lower-case, without "www." or a trailing dot."""
    host = raw.lower().rstrip(".")
    if host.startswith("www."):
        host = host[4:]
    if host.startswith("["):
        return host
    return host if _HOST.match(host) else None


@lru_cache(maxsize=1024)
def _site(site_host: str) -> str:
    host = site_host.strip().lower().rstrip(".")
    if not host.startswith("["):
        host = host.partition(":")[0].rstrip(".")
    return host[4:] if host.startswith("www.") else host


@lru_cache(maxsize=20_000)
def _known(host: str) -> tuple[str | None, str | None, tuple]:
    """(source name, kind, path entries) of a referring host: the host itself, then its parent
    domains, longest first, except that a search engine's subdomains are not the engine."""
    hosts = _lists()[0]
    labels = host.split(".")
    for i in range(len(labels) - 1):
        suffix = ".".join(labels[i:])
        entry = hosts.get(suffix) or hosts.get(_lossy(suffix))
        if entry is not None and (i == 0 or entry[1] != "search"):
            return entry
    return _UNKNOWN


def _lossy(host: str) -> str:
    for pattern, replacement in _LOSSY:
        host = pattern.sub(replacement, host)
    return host


def _app(package: str) -> tuple[str | None, str | None]:
    """An Android app referrer (`android-app://com.google.android.gm`) by its package name."""
    name, kind, _ = _lists()[0].get(package, _UNKNOWN)
    return name, kind


def _by_path(paths: tuple, rest: str, name: str | None, kind: str | None) -> tuple[str | None, str | None]:
    """Matomo's entries with a path (`google.{}/imgres`), for the rest of the referrer after its host."""
    path = rest.partition("?")[0].partition("#")[0]
    if len(path) <= 1:
        return name, kind
    for prefix, path_name, path_kind in paths:
        if path == prefix or path.startswith(prefix + "/"):
            return path_name, path_kind
    return name, kind


@lru_cache(maxsize=4096)
def _named(utm_source: str) -> tuple[str | None, str]:
    """The kind of source a utm_source names, by name ("Google") or host ("chatgpt.com"),
    and the name to show: the list's own spelling of a known name ("google" -> "Google"),
    else the tag as given."""
    key = utm_source.lower()
    by_name = _lists()[1].get(key)
    if by_name is not None:
        return by_name
    host = _host(key)
    return (_known(host)[1] if host else None), utm_source


@lru_cache(maxsize=1)
def _lists() -> tuple[dict[str, tuple], dict[str, tuple[str, str]]]:
    """Hosts (or Matomo's lossy patterns, or Android package names) to (name, kind, paths),
    and lower-cased source names to (kind, the name as the list spells it). The first list
    to name a host keeps it: ours, then Matomo's AI assistants, social networks and search
    engines last, as Matomo also lists facebook.com, chatgpt.com, perplexity.ai and you.com
    as search engines (for their search pages: Matomo counts a search only when it finds the
    keyword, which we do not look for)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def read(name):
        with open(DATA / name, encoding="utf-8") as f:
            return yaml.load(f, Loader=loader)

    ours = read("Tally.yml")
    engines = {
        name: [url for config in configs for url in config["urls"]]
        for name, configs in read("SearchEngines.yml").items()
    }
    lists = [
        ("email", ours["email"]),
        ("ai", ours["ai"]),
        ("ai", read("AIAssistants.yml")),
        ("social", read("Socials.yml")),
        ("search", engines),
    ]
    hosts: dict[str, tuple[str, str]] = {}  # host -> (name, kind)
    paths: dict[str, list[tuple[str, str, str]]] = {}  # host -> [(path, name, kind)]
    names: dict[str, tuple[str, str]] = {}  # lower-cased name -> (kind, name)
    for kind, groups in lists:
        for name, urls in groups.items():
            name = ours["names"].get(name, name)
            names.setdefault(name.lower(), (kind, name))
            for url in urls:
                url = url.lower()
                if url.startswith("android-app//"):  # Matomo's form of android-app://<package>/...
                    url = url.split("/")[2]
                host, slash, path = url.partition("/")
                host = host.removeprefix("www.")
                if slash:
                    paths.setdefault(host, []).append(("/" + path.strip("/"), name, kind))
                else:
                    hosts.setdefault(host, (name, kind))
    table: dict[str, tuple] = {host: (name, kind, tuple(paths.get(host, ()))) for host, (name, kind) in hosts.items()}
    for host, entries in paths.items():
        table.setdefault(host, (None, None, tuple(entries)))
    return table, names
