"""python manage.py demo: a `demo.example` site with 90 days of synthetic traffic, rolled up.

Realistic enough to read: weekday/weekend rhythm, a product site's pages (blog posts,
docs, pricing) with a long tail, visitors known by IP and User-Agent from a realistic mix
of browsers and devices, returning visitors whose chance to come back fades smoothly with
time (so retention curves decay without falling off a cliff), and some bot traffic that
gets dropped. Events go through the same engine path as the APIs.
"""

import random
from datetime import UTC, datetime, time, timedelta
from typing import cast

from django.core.management.base import BaseCommand
from tqdm import tqdm

from analytics import rollups
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.ingest.visit import visit_attrs
from analytics.models import Funnel, Goal, Site
from analytics.sites import SiteInfo
from analytics.store.connection import get_redis

DOMAIN = "demo.example"
DAYS = 90
TOP = ["/", "/pricing", "/features", "/docs/getting-started", "/blog", "/signup", "/login", "/about", "/contact"]
DOCS = [
    "installation",
    "configuration",
    "api/events",
    "api/stats",
    "api/authentication",
    "tracker",
    "self-hosting",
    "upgrading",
    "faq",
    "troubleshooting",
    "exports",
    "retention",
    "funnels",
    "goals",
    "privacy",
    "cluster",
]
OPENINGS = ["how-we", "why-we", "what-we-learned-when-we", "a-guide-to", "notes-on", "the-case-for"]
SUBJECTS = [
    "counted-a-billion-events",
    "moved-to-redis",
    "dropped-cookies",
    "built-retention-cohorts",
    "made-ingest-fast",
    "tested-with-real-browsers",
    "handle-bots",
    "sized-bloom-filters",
    "run-on-a-cluster",
    "measure-memory",
    "ship-weekly",
    "price-an-open-source-product",
    "wrote-our-tracker-in-1kb",
    "think-about-privacy",
]
# (share, User-Agent): roughly what a developer-tools site sees
AGENTS = [
    (
        34,
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/130.0.0.0 Safari/537.36"
        ),
    ),
    (
        18,
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/130.0.0.0 Safari/537.36"
        ),
    ),
    (
        12,
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
            "Version/18.1 Mobile/15E148 Safari/604.1"
        ),
    ),
    (
        10,
        (
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/130.0.0.0 Mobile Safari/537.36"
        ),
    ),
    (
        9,
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) "
            "Version/18.1 Safari/605.1.15"
        ),
    ),
    (8, "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"),
    (
        6,
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/130.0.0.0 Safari/537.36 Edg/130.0.0.0"
        ),
    ),
    (
        3,
        (
            "Mozilla/5.0 (iPad; CPU OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
            "Version/18.1 Mobile/15E148 Safari/604.1"
        ),
    ),
]


def _pages(rng: random.Random) -> list[str]:
    """Most visited first (the order sets the long tail)."""
    posts = [f"/blog/{opening}-{subject}" for opening in OPENINGS for subject in SUBJECTS]
    rng.shuffle(posts)
    docs = [f"/docs/{page}" for page in DOCS]
    rng.shuffle(docs)
    return TOP + docs + posts[:60] + ["/changelog", "/integrations", "/careers", "/terms", "/privacy"] + posts[60:]


# (share, referrer, landing query string): where a developer-tools site's visits come from
REFERRERS = [
    (34, None, ""),
    (26, "https://www.google.com/", ""),
    (3, "https://www.bing.com/", ""),
    (3, "https://duckduckgo.com/", ""),
    (5, "https://news.ycombinator.com/item?id=41234567", ""),
    (4, "https://www.reddit.com/r/selfhosted/comments/abc/", ""),
    (3, "https://t.co/xyz", ""),
    (2, "https://www.linkedin.com/", ""),
    (5, "https://github.com/tally/tally", ""),
    (3, "https://chatgpt.com/", "?utm_source=chatgpt.com"),
    (1, "https://www.perplexity.ai/", ""),
    (4, None, "?utm_source=newsletter&utm_medium=email&utm_campaign=november-update"),
    (
        2,
        "https://www.google.com/",
        "?utm_source=google&utm_medium=cpc&utm_campaign=self-hosted-analytics&utm_term=redis+analytics",
    ),
    (2, "https://jvns.ca/blog/2026/10/03/counting-things/", ""),
    (1, "https://lobste.rs/s/abc123/", ""),
]
# (share, country): visitors' countries; addresses are drawn from each country's registry blocks
COUNTRIES = [
    (30, "US"),
    (12, "DE"),
    (8, "GB"),
    (6, "FR"),
    (6, "IN"),
    (4, "CA"),
    (4, "NL"),
    (3, "BR"),
    (3, "JP"),
    (3, "PL"),
    (3, "ES"),
    (2, "SE"),
    (2, "AU"),
    (2, "IT"),
    (2, "CH"),
    (1, "KR"),
    (1, "SG"),
    (1, "MX"),
]
WIDTHS = {"iPhone": 390, "Android": 412, "iPad": 820}


class People:
    """Anonymous visitors as the engine sees them: an address (from a realistic mix of
    countries), a User-Agent and a screen width, and where each of their visits comes from."""

    def __init__(self, rng: random.Random):
        from analytics.ingest import geo

        self.rng = rng
        self.blocks: dict[str, list[int]] = {country: [] for _, country in COUNTRIES}
        while any(len(blocks) < 40 for blocks in self.blocks.values()):  # /16 blocks per country, by lookup
            block = rng.randrange(1 << 16)
            country = geo.location_of(f"{block >> 8}.{block & 255}.{rng.randrange(256)}.1").country
            if country in self.blocks and len(self.blocks[country]) < 40:
                self.blocks[country].append(block)

    def new(self) -> tuple:
        rng = self.rng
        country = rng.choices([c for _, c in COUNTRIES], weights=[w for w, _ in COUNTRIES])[0]
        block = rng.choice(self.blocks[country])
        ip = f"{block >> 8}.{block & 255}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        agent = rng.choices([a for _, a in AGENTS], weights=[w for w, _ in AGENTS])[0]
        width = next((w for word, w in WIDTHS.items() if word in agent), rng.choice([1280, 1440, 1536, 1920, 2560]))
        return identity_source(None, None, ip, agent), ip, agent, width

    def visit(self, person: tuple, path: str) -> str:
        """The visit dimensions of a visit landing on `path`."""
        _, ip, agent, width = person
        _, referrer, query = self.rng.choices(REFERRERS, weights=[w for w, _, _ in REFERRERS])[0]
        return visit_attrs(DOMAIN, f"https://{DOMAIN}{path}{query}", referrer, agent, ip, width)


def _time_of_day(rng: random.Random) -> float:
    """Seconds into a local day a visit starts: busiest around 15:00, quiet at night."""
    return min(86399.0, max(0.0, rng.gauss(15 * 3600, 4.5 * 3600)))


def _journey(rng: random.Random) -> list[str] | None:
    """A visit that walks the demo's funnel, as far as it goes (None: an ordinary visit):
    a quarter land on /, 45% of those go on to /pricing, half of those to /signup (where
    55% sign up): about 3% of visitors convert, as the Signup goal counts them."""
    if rng.random() >= 0.25:
        return None
    steps = ["/"]
    for page, chance in (("/pricing", 0.45), ("/signup", 0.5)):
        if rng.random() >= chance:
            break
        steps.append(page)
    return steps


def new_visitors_day(seed: int, start: datetime, span: int, visitors: int) -> list[Hit]:
    """A day of `visitors` new visitors with the demo's mixes, each a visit of 1 to 6 pageviews
    40 s apart starting within `span` seconds of `start`, in time order (the memory bench and
    its test measure this day)."""
    rng = random.Random(seed)
    crowd, pages = People(rng), _pages(rng)
    hits = []
    for _ in range(visitors):
        person = crowd.new()
        t = start + timedelta(seconds=rng.randrange(span))
        attrs = None
        for n in range(rng.randint(1, 6)):
            page = pages[min(int(len(pages) ** (rng.random() ** 1.3)) - 1, len(pages) - 1)]
            attrs = attrs or crowd.visit(person, page)
            hits.append(Hit((t + timedelta(seconds=40 * n)).astimezone(UTC), page, "pageview", person[0], attrs=attrs))
    hits.sort(key=lambda h: cast(datetime, h.ts))  # (every hit here has its time)
    return hits


class Command(BaseCommand):
    help = f"Create {DOMAIN} with {DAYS} days of synthetic traffic and roll it up."

    def add_arguments(self, parser):
        parser.add_argument("--visitors", type=int, default=900, help="typical weekday visitors (default 900)")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument(
            "--now",
            type=datetime.fromisoformat,
            default=None,
            help="the moment the traffic ends (ISO 8601 with offset; default: now), for reproducible demos",
        )

    def handle(self, visitors, seed, now=None, **options) -> None:
        rng = random.Random(seed)
        site, created = Site.objects.get_or_create(domain=DOMAIN, defaults={"timezone": "Europe/Berlin"})
        if not created:
            self.stdout.write(f"{DOMAIN} exists already; adding another {DAYS} days of traffic to it.")
        info = SiteInfo.from_model(site)
        for name, event, pattern in (
            ("Signup", "Signup", ""),
            ("Read the docs", "", "/docs/**"),
            ("Pricing", "", "/pricing"),
        ):
            Goal.objects.get_or_create(site=site, name=name, defaults={"event_name": event, "page_pattern": pattern})
        Funnel.objects.get_or_create(
            site=site, name="Signup journey", defaults={"steps": "/\n/pricing\n/signup\nevent:Signup"}
        )
        r = get_redis()
        pages = _pages(rng)
        crowd = People(rng)
        now = (now or datetime.now(UTC)).astimezone(UTC)
        today = now.astimezone(info.tz).date()
        # Returning visitors: a share of each day's newcomers "stick" and come back with a
        # chance that fades smoothly with the days since they arrived (a power law: no
        # cliff where everyone stops at once), which gives retention its usual shape.
        sticky: dict[tuple, tuple[float, int]] = {}  # person -> (first chance, day offset arrived)
        total = 0
        for offset in tqdm(range(DAYS - 1, -1, -1), desc="traffic", unit="day", file=self.stderr._out):
            day = today - timedelta(days=offset)
            weekend = day.weekday() >= 5
            rhythm = (0.55 if weekend else 1.0) * (1 + 0.3 * (DAYS - offset) / DAYS) * rng.uniform(0.85, 1.15)
            people = [
                p
                for p, (chance, arrived) in sticky.items()
                if rng.random() < chance * (1 + (arrived - offset) / 3) ** -0.8 * (0.7 if weekend else 1.0)
            ]
            for _ in range(int(visitors * rhythm * 0.6)):
                person = crowd.new()
                people.append(person)
                if rng.random() < 0.35:
                    sticky[person] = (rng.uniform(0.15, 0.45), offset)
            day_start = datetime.combine(day, time(), tzinfo=info.tz)
            hits = []
            for person in people:
                source = person[0]
                # A day shaped like a day: visits around mid-afternoon, fewest at night
                # (today's are the ones whose time has come, not the whole day's squeezed in).
                start = day_start + timedelta(seconds=_time_of_day(rng))
                if start > now:
                    continue
                attrs = None
                journey = _journey(rng)  # (some visits walk the signup funnel: / -> /pricing -> /signup)
                views = journey or [
                    pages[min(int(len(pages) ** (rng.random() ** 1.3)) - 1, len(pages) - 1)]
                    for _ in range(min(1 + int(rng.expovariate(0.7)), 12))
                ]
                for n, page in enumerate(views):
                    ts = (start + timedelta(seconds=rng.randrange(20, 240) * n)).astimezone(UTC)
                    if ts > now:
                        break
                    attrs = attrs or crowd.visit(person, page)
                    hits.append(Hit(ts, page, "pageview", source, attrs=attrs))
                if attrs and journey and journey[-1] == "/signup" and rng.random() < 0.55:
                    plan = rng.choices(["free", "team", "business"], weights=[70, 22, 8])[0]
                    money = None if plan == "free" else ("EUR", 1900 if plan == "team" else 9900)
                    hits.append(
                        Hit(
                            min(now, start.astimezone(UTC) + timedelta(seconds=240 * len(journey))),
                            "/signup",
                            "Signup",
                            source,
                            attrs=attrs,
                            props=(("plan", plan),),
                            revenue=money,
                        )
                    )
            if offset == 0:  # a few people on the site right now, for the live counter
                for _ in range(rng.randint(3, 9)):  # (people like the others: sources, devices and places too)
                    person, page = crowd.new(), rng.choice(pages[:8])
                    hits.append(
                        Hit(
                            now - timedelta(seconds=rng.randrange(240)),
                            page,
                            "pageview",
                            person[0],
                            attrs=crowd.visit(person, page),
                        )
                    )
            hits += [Hit(day_start.astimezone(UTC), "/", "pageview", b"bot", bot=True)] * rng.randint(20, 60)
            hits.sort(key=lambda h: cast(datetime, h.ts))  # (every hit here has its time)
            for i in range(0, len(hits), 2000):
                total += record(r, info, hits[i : i + 2000], now=now).accepted
        days = list(range(0, DAYS, 7))
        for first in tqdm(days, desc="rollups", unit="week", file=self.stderr._out):
            start = today - timedelta(days=DAYS - 1 - first)
            rollups.rollup(r, site, start, min(start + timedelta(days=6), today), today=today)
        self.stdout.write(f"{DOMAIN}: {total:,} events over {DAYS} days, rolled up. Open /dashboard/{DOMAIN}/")
