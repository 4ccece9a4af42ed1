"""python manage.py demo: a `demo.example` site with 90 days of synthetic traffic, rolled up.

Realistic enough to read: weekday/weekend rhythm, a few hundred pages with a long tail,
a pool of returning visitors (so retention curves look real) beside one-off ones, and
some bot traffic that gets dropped. Events go through the same engine path as the APIs.
"""
import random
from datetime import UTC, datetime, time, timedelta

from django.core.management.base import BaseCommand
from tqdm import tqdm

from analytics import rollups
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import Site
from analytics.sites import SiteInfo
from analytics.store.connection import get_redis

DOMAIN = "demo.example"
DAYS = 90
SECTIONS = ["blog", "docs", "guides", "changelog", "integrations"]


def _pages(rng: random.Random) -> list[str]:
    pages = ["/", "/pricing", "/features", "/about", "/signup", "/login", "/contact"]
    for section in SECTIONS:
        pages.append(f"/{section}")
        pages += [f"/{section}/{section[:-1] if section.endswith('s') else section}-{n}" for n in range(rng.randint(30, 70))]
    return pages


class Command(BaseCommand):
    help = f"Create {DOMAIN} with {DAYS} days of synthetic traffic and roll it up."

    def add_arguments(self, parser):
        parser.add_argument("--visitors", type=int, default=900, help="typical weekday visitors (default 900)")
        parser.add_argument("--seed", type=int, default=1)

    def handle(self, visitors, seed, **options):
        rng = random.Random(seed)
        site, created = Site.objects.get_or_create(domain=DOMAIN, defaults={"timezone": "Europe/Berlin"})
        if not created:
            self.stdout.write(f"{DOMAIN} exists already; adding another {DAYS} days of traffic to it.")
        info = SiteInfo.from_model(site)
        r = get_redis()
        pages = _pages(rng)
        today = info.today()
        now = datetime.now(UTC)
        # Returning visitors: a share of each day's newcomers "stick" and come back with a
        # chance that fades day by day, which gives retention curves their usual shape.
        sticky: dict[str, float] = {}
        total = 0
        for offset in tqdm(range(DAYS - 1, -1, -1), desc="traffic", unit="day", file=self.stderr._out):
            day = today - timedelta(days=offset)
            weekend = day.weekday() >= 5
            rhythm = (0.55 if weekend else 1.0) * (1 + 0.3 * (DAYS - offset) / DAYS) * rng.uniform(0.85, 1.15)
            people = [p for p, chance in sticky.items() if rng.random() < chance * (0.7 if weekend else 1.0)]
            for _ in range(int(visitors * rhythm * 0.6)):
                person = f"v{rng.getrandbits(48)}"
                people.append(person)
                if rng.random() < 0.35:
                    sticky[person] = rng.uniform(0.15, 0.45)
            sticky = {p: chance * 0.94 for p, chance in sticky.items() if chance > 0.02}
            day_start = datetime.combine(day, time(), tzinfo=info.tz)
            latest = min(now, day_start + timedelta(days=1))
            span = max(60.0, (latest - day_start).total_seconds())
            if span < 86400:  # today: only the part of the day that has passed
                people = people[: int(len(people) * span / 86400) + 1]
            hits = []
            for person in people:
                source = identity_source(None, person, None, None)
                start = day_start + timedelta(seconds=min(span - 1, abs(rng.gauss(0.55, 0.2)) * span))
                for n in range(min(1 + int(rng.expovariate(0.7)), 12)):
                    ts = (start + timedelta(minutes=2 * n)).astimezone(UTC)
                    if ts > now:
                        break
                    page = pages[min(int(len(pages) ** rng.random()) - 1, len(pages) - 1)]
                    hits.append(Hit(ts, page, "pageview", source))
                if rng.random() < 0.03:
                    hits.append(Hit(start.astimezone(UTC), "/signup", "Signup", source))
            if offset == 0:  # a few people on the site right now, for the live counter
                hits += [Hit(now - timedelta(seconds=rng.randrange(240)), rng.choice(pages[:8]), "pageview", identity_source(None, f"now-{n}", None, None)) for n in range(rng.randint(3, 9))]
            hits += [Hit(day_start.astimezone(UTC), "/", "pageview", b"bot", bot=True)] * rng.randint(20, 60)
            hits.sort(key=lambda h: h.ts)
            for i in range(0, len(hits), 2000):
                total += record(r, info, hits[i : i + 2000], now=now).accepted
        days = list(range(0, DAYS, 7))
        for first in tqdm(days, desc="rollups", unit="week", file=self.stderr._out):
            start = today - timedelta(days=DAYS - 1 - first)
            rollups.rollup(r, site, start, min(start + timedelta(days=6), today), today=today)
        self.stdout.write(f"{DOMAIN}: {total:,} events over {DAYS} days, rolled up. Open /dashboard/{DOMAIN}/")
