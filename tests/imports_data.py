"""A known random event stream for the import tests: visitors who come back on other days,
visits of several pageviews (some across midnight), custom events, referrers and tagged
links, countries, devices. Written as a GA4 BigQuery export (rows in no order, with GA4's
automatic events) and as an Umami export (CSV), and counted the slow, obvious way."""

import csv
import gzip
import io
import random
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from urllib.parse import quote
from zoneinfo import ZoneInfo

import orjson

from analytics import queries
from analytics.store import keys

HOST = "example.com"
TIMEOUT = 30 * 60

# (ISO code, GA4's name, GA4's region, Umami's region, city)
PLACES = [
    ("US", "United States", "California", "US-CA", "San Francisco"),
    ("DE", "Germany", "Bavaria", "DE-BY", "Munich"),
    ("FR", "France", "Île-de-France", "FR-IDF", "Paris"),
    ("GB", "United Kingdom", "England", "GB-ENG", "London"),
    ("BA", "Bosnia & Herzegovina", "Sarajevo Canton", "BA-09", "Sarajevo"),
]
# GA4's device fields, Umami's, and what Tally shows (browser, OS, device)
DEVICES = [
    (
        ("Chrome", "120.0.6099.109", "Windows", "Windows 10", "desktop"),
        ("chrome", "Windows 10", "desktop", "1920x1080"),
        ("Chrome", "Windows", "Desktop"),
    ),
    (
        ("Chrome", "121.0.0.0", "Android", "Android 14", "mobile"),
        ("chrome", "Android OS", "mobile", "412x915"),
        ("Chrome Mobile", "Android", "Mobile"),
    ),
    (
        ("Safari", "17.4", "iOS", "iOS 17.4.1", "mobile"),
        ("ios", "iOS", "mobile", "390x844"),
        ("Mobile Safari", "iOS", "Mobile"),
    ),
    (
        ("Safari", "17.1", "Macintosh", "Macintosh Intel 10.15", "desktop"),
        ("safari", "Mac OS", "laptop", "1440x900"),
        ("Safari", "macOS", "Desktop"),
    ),
    (
        ("Firefox", "128.0", "Linux", "Linux x86_64", "desktop"),
        ("firefox", "Linux", "desktop", "1280x720"),
        ("Firefox", "Linux", "Desktop"),
    ),
]
# A visit's first referrer and query -> the source Tally names
ENTRIES = [
    (None, "", "Direct / None"),
    ("https://www.google.com/", "", "Google"),
    ("https://news.ycombinator.com/item?id=42", "", "Hacker News"),
    (None, "utm_source=newsletter&utm_medium=email&utm_campaign=spring", "newsletter"),
]
PAGES = ["/", "/pricing", "/blog/über-uns", "/docs/start", "/contact"]


@dataclass
class Visitor:
    id: str
    place: tuple
    device: tuple


@dataclass
class Event:
    ts: datetime
    visitor: Visitor
    name: str  # "pageview" or a custom event's
    path: str
    referrer: str | None = None
    query: str = ""
    props: dict = field(default_factory=dict)
    revenue: float | None = None
    first: bool = False  # a visit's first event (GA4 writes session_start beside it)


def make_events(tz: ZoneInfo, today: date, seed: int = 34, visitors: int = 300) -> list[Event]:
    """Events of the days from a week before `today` to the day before yesterday (in the
    site's time zone), each visitor's visits apart by hours, their events minutes apart."""
    rng = random.Random(seed)
    first_day = today - timedelta(days=7)
    slots = [  # (visits start in 3-hour slots: the visits of a visitor never touch)
        datetime(first_day.year, first_day.month, first_day.day, tzinfo=tz) + timedelta(hours=3 * n)
        for n in range(6 * 8)
    ]
    events = []
    for v in range(visitors):
        visitor = Visitor(f"{rng.randrange(10**9)}.{1_700_000_000 + v}", rng.choice(PLACES), rng.choice(DEVICES))
        for slot in sorted(rng.sample(slots, rng.choice([1, 1, 2, 3, 4]))):
            t = (slot + timedelta(seconds=rng.randrange(3600))).astimezone(UTC)
            referrer, query, _ = rng.choice(ENTRIES)
            previous = None
            for n in range(rng.randint(1, 6)):
                path = rng.choice(PAGES)
                url_referrer = referrer if n == 0 else f"https://{HOST}{previous}"
                events.append(Event(t, visitor, "pageview", path, url_referrer, query if n == 0 else "", first=n == 0))
                roll = rng.random()
                if roll < 0.15:
                    events.append(
                        Event(
                            t + timedelta(seconds=3),
                            visitor,
                            "Signup",
                            path,
                            props={"plan": rng.choice(["free", "pro"])},
                        )
                    )
                elif roll < 0.22:
                    events.append(
                        Event(
                            t + timedelta(seconds=4),
                            visitor,
                            "purchase",
                            path,
                            props={"coupon": "SPRING"},
                            revenue=rng.choice([9.99, 49.5]),
                        )
                    )
                previous = path
                t += timedelta(seconds=rng.choice([5, 40, 300, 900]))
    events.sort(key=lambda e: e.ts)
    return events


def ga4_export(events: list[Event], seed: int = 34) -> bytes:
    """The events as rows of GA4's BigQuery export (NDJSON, INT64 as strings), with the
    automatic events GA4 adds, an anonymous row, and the rows shuffled."""
    rng = random.Random(seed)
    rows, seen = [], set()
    for e in events:
        url = f"https://www.{HOST}{quote(e.path)}" + (f"?{e.query}" if e.query else "")  # (GA4's are percent-encoded)
        params = [("page_location", url), ("ga_session_id", str(rng.randrange(10**9)))]
        if e.referrer:
            params.append(("page_referrer", e.referrer))
        params += [(k, v) for k, v in e.props.items()]
        (browser, version, os, os_version, category) = e.visitor.device[0]
        code, country, region, _, city = e.visitor.place
        base = {
            "event_date": e.ts.strftime("%Y%m%d"),
            "event_timestamp": str(int(e.ts.timestamp() * 1_000_000)),
            "user_pseudo_id": e.visitor.id,
            "device": {
                "category": category,
                "operating_system": os,
                "operating_system_version": os_version,
                "language": "en-us",
                "web_info": {"browser": browser, "browser_version": version, "hostname": f"www.{HOST}"},
            },
            "geo": {"country": country, "region": region, "city": city, "continent": "Europe"},
        }

        def row(name, params=params, base=base, **more):
            items = [{"key": k, "value": {"string_value": v}} for k, v in params]
            items.append({"key": "engagement_time_msec", "value": {"int_value": "1200"}})
            return {**base, "event_name": name, "event_params": items, **more}

        if e.first:
            if e.visitor.id not in seen:
                rows.append(row("first_visit"))
                seen.add(e.visitor.id)
            rows.append(row("session_start"))
        if e.name == "pageview":
            traffic = {"manual_source": "newsletter", "manual_medium": "email"} if e.query else {}
            rows.append(row("page_view", collected_traffic_source=traffic))
            if rng.random() < 0.3:
                rows.append(row("scroll"))
                rows.append(row("user_engagement"))
        elif e.name == "purchase":
            rows.append(
                row(
                    "purchase",
                    params=params + [("currency", "EUR")],
                    ecommerce={"purchase_revenue": e.revenue, "purchase_revenue_in_usd": (e.revenue or 0) * 1.1},
                )
            )
        else:
            rows.append(row(e.name))
    anonymous = dict(rows[0], user_pseudo_id=None, event_name="page_view")  # (consent mode: no id)
    rows.append(anonymous)
    rng.shuffle(rows)
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


UMAMI_COLUMNS = [
    "event_id", "website_id", "session_id", "visit_id", "created_at", "url_path", "url_query", "referrer_path",
    "referrer_query", "referrer_domain", "page_title", "event_type", "event_name", "hostname",
    "browser", "os", "device", "screen", "language", "country", "subdivision1", "city",
]  # fmt: skip


def umami_export(events: list[Event], seed: int = 34) -> bytes:
    """The events as Umami's website_event rows joined with their session (CSV), shuffled."""
    rng = random.Random(seed)
    sessions: dict[str, str] = {}
    rows = []
    for e in events:
        session = sessions.setdefault(e.visitor.id, str(uuid.UUID(int=rng.getrandbits(128))))
        domain = path = query = ""
        if e.referrer and not e.referrer.startswith(f"https://{HOST}"):
            rest = e.referrer.split("://", 1)[1]
            domain, _, tail = rest.partition("/")
            path, _, query = ("/" + tail).partition("?")
        browser, os, device, screen = e.visitor.device[1]
        code, _, _, region, city = e.visitor.place
        custom = e.name != "pageview"
        rows.append(
            {
                "event_id": str(uuid.UUID(int=rng.getrandbits(128))),
                "website_id": "6a3b6c1e-0000-4000-8000-000000000001",
                "session_id": session,
                "visit_id": "",
                "created_at": e.ts.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "+00",
                "url_path": e.path,
                "url_query": e.query,
                "referrer_path": path,
                "referrer_query": query,
                "referrer_domain": domain,
                "page_title": 'A page, "quoted"\nover two lines',
                "event_type": "2" if custom else "1",
                "event_name": e.name if custom else "",
                "hostname": HOST,
                "browser": browser,
                "os": os,
                "device": device,
                "screen": screen,
                "language": "en-US",
                "country": code,
                "subdivision1": region,
                "city": city,
            }
        )
    rng.shuffle(rows)
    out = io.StringIO()
    writer = csv.DictWriter(out, UMAMI_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


@dataclass
class Truth:
    pageviews: dict = field(default_factory=lambda: defaultdict(int))  # day -> n
    visitors: dict = field(default_factory=lambda: defaultdict(set))  # day -> {visitor}
    new: dict = field(default_factory=lambda: defaultdict(set))  # day -> {visitor}
    visits: dict = field(default_factory=lambda: defaultdict(int))  # day the visit started -> n
    pages: dict = field(default_factory=lambda: defaultdict(int))  # path -> pageviews
    events: dict = field(default_factory=lambda: defaultdict(int))  # (day, name) -> n
    by: dict = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))  # dimension -> value -> visits


def brute_force(events: list[Event], tz: ZoneInfo) -> Truth:
    """The numbers the slow, obvious way: visits split by 30-minute gaps, each visit under
    its first event's source, country and device."""
    truth = Truth()
    by_visitor = defaultdict(list)
    for e in events:
        by_visitor[e.visitor.id].append(e)
        day = e.ts.astimezone(tz).date()
        truth.visitors[day].add(e.visitor.id)
        if e.name == "pageview":
            truth.pageviews[day] += 1
            truth.pages[e.path] += 1
        else:
            truth.events[day, e.name] += 1
    for visitor, evs in by_visitor.items():
        truth.new[evs[0].ts.astimezone(tz).date()].add(visitor)
        start = None
        for n, e in enumerate(evs):
            if n == 0 or (e.ts - evs[n - 1].ts).total_seconds() > TIMEOUT:
                start = e
                truth.visits[e.ts.astimezone(tz).date()] += 1
                source = next(s for ref, q, s in ENTRIES if ref == e.referrer and q == e.query)
                truth.by["source"][source] += 1
                truth.by["country"][e.visitor.place[0]] += 1
                truth.by["browser"][e.visitor.device[2][0]] += 1
                truth.by["device"][e.visitor.device[2][2]] += 1
        assert start is not None
    return truth


def access_log(events: list[Event]) -> bytes:
    """The pageviews as access-log lines (a visitor is an address), in time order."""
    lines = []
    for e in events:
        if e.name == "pageview":
            ip = f"81.2.{int(e.visitor.id.split('.')[1]) % 250}.{int(e.visitor.id.split('.')[1]) // 250 % 250}"
            stamp = e.ts.strftime("%d/%b/%Y:%H:%M:%S +0000")
            target = quote(e.path) + (f"?{e.query}" if e.query else "")
            agent = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
            lines.append(f'{ip} - - [{stamp}] "GET {target} HTTP/1.1" 200 512 "{e.referrer or "-"}" "{agent}"')
    return ("\n".join(lines) + "\n").encode()


def days_of(truth: Truth) -> list[date]:
    first, last = min(truth.visitors), max(truth.visitors)
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def numbers(r, site, truth: Truth, dimensions=("source", "country", "browser", "device")) -> dict:
    """Tally's numbers over the truth's days, as the read side gives them, beside brute force's."""
    days = days_of(truth)
    series = queries.timeseries(r, site, days[0], days[-1], ["pageviews", "dau", "new_visitors", "visits"])
    pages, _ = queries.ranked_pages(r, site, days[0], days[-1], limit=100)
    found = {
        "pageviews": [row["pageviews"] for row in series],
        "dau": [row["dau"] for row in series],
        "new_visitors": [row["new_visitors"] for row in series],
        "visits": [row["visits"] for row in series],
        "pages": {row["page"]: row["pageviews"] for row in pages},
        "events": {
            (day, name): int(r.get(keys.event_count(site.id, day, name)) or 0) for day, name in sorted(truth.events)
        },
    }
    for dimension in dimensions:
        rows, _ = queries.breakdown(r, site, days[0], days[-1], dimension, limit=100)
        found[dimension] = {row[dimension]: row["visits"] for row in rows}
    return found


def expected(truth: Truth, dimensions=("source", "country", "browser", "device")) -> dict:
    days = days_of(truth)
    wanted = {
        "pageviews": [truth.pageviews.get(day, 0) for day in days],
        "dau": [len(truth.visitors.get(day, ())) for day in days],
        "new_visitors": [len(truth.new.get(day, ())) for day in days],
        "visits": [truth.visits.get(day, 0) for day in days],
        "pages": dict(truth.pages),
        "events": dict(sorted(truth.events.items())),
    }
    for dimension in dimensions:
        wanted[dimension] = dict(truth.by[dimension])
    return wanted
