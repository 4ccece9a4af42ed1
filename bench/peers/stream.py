"""The peers' input: one deterministic, realistic stream of web-analytics events.

    for batch in batches(200_000):  # lists of 1,000 events, in time order
        post("/api/v1/events", batch)

Each event is a dict in the format of Tally's batch API (`POST /api/v1/events`,
analytics/ingest/schemas.py BatchEvent): `url`, `ts` (ISO 8601, UTC), `ip`, `user_agent`,
`referrer` (left out when there is none), `name` ("pageview" or "Signup") and, for a
signup, `props` {"plan": ...}. There is no `visitor`: a visitor is their address and
User-Agent, as a browser is, so every engine hashes the same thing.

What makes it realistic enough to measure on:

* visitors returning over days: a pool of about 450,000 visitors per 3.9 million events
  (scaled with `n_events`), 12% of them regulars who come back all along, the others
  newcomers whose chance to come back fades with the days since they arrived, a few of
  them far more often than most (a heavy tail);
* sessions of a few pageviews 5 s to 10 min apart, and at least 40 minutes between two
  sessions of one visitor: every engine's 30-minute timeout (Plausible's, which counts
  whole minutes, and Tally's, which counts seconds) splits them the same way;
* where sessions come from: the demo's mix (analytics/management/commands/demo.py
  REFERRERS: search engines, social sites, direct, UTM-tagged campaigns), the landing URL
  carrying the campaign's tags; later pageviews have the previous page as referrer;
* 40 real browsers' User-Agents (from analytics/ingest/data/crawler-user-agents/
  browsers.txt; none that Tally's crawler checks drop: WhatsApp's and Slack's link
  previews are left out for that reason), desktop and mobile in today's proportions;
* addresses in 30 countries by Tally's own geo lookup (geo.location_of), none in a
  data-centre range (datacenters.is_datacenter), each session at an hour that is daytime
  in its visitor's country;
* a heavy-tailed set of ~500 pages (the demo's product site, then a long tail of
  reference and changelog pages); about 2% of events are "Signup" custom events, sent
  by the sessions that walk / -> /pricing -> /signup (the funnel the queries ask about);
* weekdays busier than weekends, and traffic that grows over the range.

The days: `days` whole UTC days ending with `last_day`, yesterday by default, so every day
is closed (a session that would run past the last day's midnight is cut there). The same
arguments (with the same `last_day`) give the same events, byte for byte. Event numbers
are exact: the stream is cut at `n_events`, in time order.

A visitor's pageviews are at least 5 seconds apart (a signup 3 seconds after its page),
one session at a time, at most 30 events a session: no visitor comes near Tally's
inhuman-rate filter (300 pageviews in 10 minutes). Needs Django's settings
(DJANGO_SETTINGS_MODULE) for the geo lookup.
"""

import random
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from itertools import accumulate
from math import log

from analytics.ingest.datacenters import is_datacenter
from analytics.ingest.geo import location_of
from analytics.management.commands.demo import DOCS, OPENINGS, REFERRERS, SUBJECTS, TOP

BATCH = 1000
DOMAIN = "peers.example"
VISITORS_PER_EVENT = 450_000 / 3_900_000  # the stream: 450,000 visitors, 3.9 million events
REGULARS = 0.12  # share of visitors who keep coming back, first seen over the first week
SESSION_GAP = 40 * 60  # at least this between two sessions of a visitor (every timeout is 30 minutes)
MAX_STEP = 10 * 60  # at most this between two events of a session
MIN_STEP = 5

# (share, User-Agent): real browsers of 2026, desktop ~55%, mobile ~45%; taken from
# browsers.txt, where Tally's crawler checks are tested never to match them.
_CHROME = "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/146.0.0.0"
_SAFARI = "AppleWebKit/605.1.15 (KHTML, like Gecko)"
_IPHONE = "iPhone; CPU iPhone OS 18_6 like Mac OS X"
AGENTS = [
    (22, f"Mozilla/5.0 (Windows NT 10.0; Win64; x64) {_CHROME} Safari/537.36"),
    (10, f"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) {_CHROME} Safari/537.36"),
    (2, f"Mozilla/5.0 (X11; Linux x86_64) {_CHROME} Safari/537.36"),
    (1, f"Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) {_CHROME} Safari/537.36"),
    (12, f"Mozilla/5.0 (Linux; Android 10; K) {_CHROME} Mobile Safari/537.36"),
    (1, f"Mozilla/5.0 (Linux; Android 10; K) {_CHROME} Safari/537.36"),
    (2, f"Mozilla/5.0 ({_IPHONE}) {_SAFARI} CriOS/146.0.7680.40 Mobile/15E148 Safari/604.1"),
    (0.5, f"Mozilla/5.0 (iPad; CPU OS 18_6 like Mac OS X) {_SAFARI} CriOS/146.0.7680.40 Mobile/15E148 Safari/604.1"),
    (6, f"Mozilla/5.0 (Windows NT 10.0; Win64; x64) {_CHROME} Safari/537.36 Edg/146.0.0.0"),
    (0.5, f"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) {_CHROME} Safari/537.36 Edg/146.0.0.0"),
    (0.3, f"Mozilla/5.0 (Linux; Android 10; K) {_CHROME} Mobile Safari/537.36 EdgA/146.0.0.0"),
    (0.3, f"Mozilla/5.0 ({_IPHONE}) {_SAFARI} Version/26.0 EdgiOS/146.0.3856.50 Mobile/15E148 Safari/605.1.15"),
    (3, "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:148.0) Gecko/20100101 Firefox/148.0"),
    (0.5, "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:140.0) Gecko/20100101 Firefox/140.0"),
    (1, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:148.0) Gecko/20100101 Firefox/148.0"),
    (1, "Mozilla/5.0 (X11; Linux x86_64; rv:148.0) Gecko/20100101 Firefox/148.0"),
    (0.5, "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:148.0) Gecko/20100101 Firefox/148.0"),
    (0.8, "Mozilla/5.0 (Android 15; Mobile; rv:148.0) Gecko/148.0 Firefox/148.0"),
    (0.4, f"Mozilla/5.0 ({_IPHONE}) {_SAFARI} FxiOS/148.0 Mobile/15E148 Safari/605.1.15"),
    (5, f"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) {_SAFARI} Version/26.0 Safari/605.1.15"),
    (2, f"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) {_SAFARI} Version/18.6 Safari/605.1.15"),
    (10, f"Mozilla/5.0 ({_IPHONE}) {_SAFARI} Version/26.0 Mobile/15E148 Safari/604.1"),
    (2, f"Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) {_SAFARI} Version/17.7 Mobile/15E148 Safari/604.1"),
    (2, f"Mozilla/5.0 (iPad; CPU OS 18_6 like Mac OS X) {_SAFARI} Version/26.0 Mobile/15E148 Safari/604.1"),
    (
        2,
        "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/29.0 "
        "Chrome/136.0.0.0 Mobile Safari/537.36",
    ),
    (
        1,
        "Mozilla/5.0 (Linux; Android 15; SAMSUNG SM-S931B) AppleWebKit/537.36 (KHTML, like Gecko) "
        "SamsungBrowser/28.0 Chrome/130.0.0.0 Mobile Safari/537.36",
    ),
    (
        0.4,
        "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) "
        "SamsungBrowser/27.0 Chrome/125.0.0.0 Safari/537.36",
    ),
    (
        1,
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/145.0.0.0 "
        "Safari/537.36 OPR/130.0.0.0",
    ),
    (
        0.3,
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/145.0.0.0 Safari/537.36 OPR/130.0.0.0",
    ),
    (
        0.4,
        "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/145.0.0.0 "
        "Mobile Safari/537.36 OPR/92.0.0.0",
    ),
    (0.2, f"Mozilla/5.0 ({_IPHONE}) {_SAFARI} Version/18.0 Mobile/15E148 Safari/604.1 OPT/6.2.0"),
    (0.3, f"Mozilla/5.0 (Windows NT 10.0; Win64; x64) {_CHROME} Safari/537.36 Vivaldi/7.6.3797.52"),
    (
        0.3,
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 "
        "YaBrowser/25.10.0.0 Safari/537.36",
    ),
    (
        0.3,
        "Mozilla/5.0 (Linux; Android 15) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/146.0.0.0 "
        "Mobile DuckDuckGo/5 Safari/537.36",
    ),
    (0.3, f"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) {_SAFARI} Version/26.0 Safari/605.1.15 Ddg/26.0"),
    (
        0.5,
        "Mozilla/5.0 (Linux; Android 15; Pixel 9 Build/AP4A.250205.002; wv) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Version/4.0 Chrome/146.0.0.0 Mobile Safari/537.36 Instagram 390.0.0.43.81 Android (35/15; 420dpi; "
        "1080x2424; Google/google; Pixel 9; tokay; tokay; en_US; 768371122)",
    ),
    (
        0.6,
        f"Mozilla/5.0 ({_IPHONE}) {_SAFARI} Mobile/15E148 Instagram 390.0.0.28.85 (iPhone16,2; iOS 18_6; en_US; "
        "en; scale=3.00; 1290x2796; 760000000; IABMV/1)",
    ),
    (
        0.4,
        "Mozilla/5.0 (Linux; Android 14; SM-S918B Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Version/4.0 Chrome/146.0.0.0 Mobile Safari/537.36 [FB_IAB/FB4A;FBAV/500.0.0.48.111;IABMV/1;]",
    ),
    (
        0.5,
        f"Mozilla/5.0 ({_IPHONE}) {_SAFARI} Mobile/15E148 [FBAN/FBIOS;FBAV/500.0.0.39.97;FBBV/700000000;"
        "FBDV/iPhone16,2;FBMD/iPhone;FBSN/iOS;FBSV/18.6;FBSS/3;FBID/phone;FBLC/en_US;FBOP/5;FBRV/0;IABMV/1]",
    ),
    (0.8, f"Mozilla/5.0 ({_IPHONE}) {_SAFARI} GSA/390.0.800000000 Mobile/15E148 Safari/604.1"),
]

# (share, country, its visitors' hours ahead of UTC): where the visitors are, and when their day is
COUNTRIES = [
    (28, "US", -6),
    (10, "DE", 1),
    (7, "GB", 0),
    (6, "IN", 5.5),
    (5, "FR", 1),
    (4, "CA", -5),
    (3, "NL", 1),
    (3, "BR", -3),
    (2.5, "JP", 9),
    (2.5, "PL", 1),
    (2.5, "ES", 1),
    (2, "AU", 10),
    (2, "IT", 1),
    (1.5, "SE", 1),
    (1.5, "CH", 1),
    (1, "KR", 9),
    (1, "SG", 8),
    (1, "MX", -6),
    (1, "AT", 1),
    (1, "BE", 1),
    (0.8, "CZ", 1),
    (0.8, "TR", 3),
    (0.8, "ID", 7),
    (0.8, "DK", 1),
    (0.7, "FI", 2),
    (0.7, "NO", 1),
    (0.7, "IE", 0),
    (0.6, "PT", 0),
    (0.5, "ZA", 2),
    (0.5, "AR", -3),
]
PLANS = ["free", "starter", "business", "enterprise"]  # a signup's {"plan": ...}
PLAN_WEIGHTS = [60, 25, 12, 3]
SIGNUP = "Signup"


def batches(
    n_events: int, days: int = 60, seed: int = 38, domain: str = DOMAIN, last_day: date | None = None
) -> Iterator[list[dict]]:
    """`n_events` events over `days` whole UTC days ending with `last_day` (default:
    yesterday, UTC), in lists of 1,000 (the last one shorter), in time order."""
    batch: list[dict] = []
    for event in _Stream(random.Random(seed), domain).events(n_events, days, last_day):
        batch.append(event)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def pages(rng: random.Random) -> list[str]:
    """The site's pages, most visited first (the order sets the long tail): the demo's
    product site, then reference and changelog pages few people read."""
    posts = [f"/blog/{opening}-{subject}" for opening in OPENINGS for subject in SUBJECTS]
    rng.shuffle(posts)
    docs = [f"/docs/{page}" for page in DOCS]
    rng.shuffle(docs)
    tail = [f"/docs/reference/{n}" for n in range(1, 301)] + [
        f"/changelog/v{a}.{b}" for a in (1, 2, 3) for b in range(30)
    ]
    rng.shuffle(tail)
    return (
        TOP + docs + posts[:40] + ["/changelog", "/integrations", "/careers", "/terms", "/privacy"] + posts[40:] + tail
    )


class _Stream:
    def __init__(self, rng: random.Random, domain: str):
        self.rng, self.domain = rng, domain
        self.pages = pages(rng)
        self.page_weights = list(accumulate(1 / (rank + 1) ** 1.1 for rank in range(len(self.pages))))
        self.agents = [a for _, a in AGENTS]
        self.agent_weights = list(accumulate(w for w, _ in AGENTS))
        self.referrer_weights = list(accumulate(w for w, _, _ in REFERRERS))
        self.country_weights = list(accumulate(w for w, _, _ in COUNTRIES))
        self.blocks = _blocks(rng)
        # visitors, by number: (address, User-Agent, hours ahead of UTC)
        self.visitors: list[tuple[str, str, float]] = []
        self.addresses: set[str] = set()
        self._days: dict[int, str] = {}

    def events(self, n_events: int, days: int, last_day: date | None) -> Iterator[dict]:
        rng = self.rng
        last_day = last_day or datetime.now(UTC).date() - timedelta(days=1)
        first_day = last_day - timedelta(days=days - 1)
        shape = [
            (0.6 if (first_day + timedelta(days=i)).weekday() >= 5 else 1.0)
            * (1 + 0.3 * i / days)
            * rng.uniform(0.9, 1.1)
            for i in range(days)
        ]
        share = [0.0, *accumulate(shape)]
        n_visitors = max(1, round(n_events * VISITORS_PER_EVENT))
        regulars = round(n_visitors * REGULARS)
        newcomers = n_visitors - regulars
        regular_days = min(7, days)
        cohorts: list[list] = []  # [day index, first visitor, count, regulars?]
        busy: dict[int, list[tuple[int, int]]] = {}  # visitor -> their recent sessions' (start, end)
        made = emitted = 0
        spill: list[tuple[int, int, dict]] = []
        seq = 0
        for i in range(days):
            day_start = int(datetime.combine(first_day + timedelta(days=i), datetime.min.time(), UTC).timestamp())
            day_end = day_start + 86400
            cut = day_end if i == days - 1 else None  # the last day's sessions end at its midnight
            busy = {
                v: kept for v, spans in busy.items() if (kept := [s for s in spans if s[1] > day_start - SESSION_GAP])
            }
            arrivals = round(newcomers * share[i + 1] / share[-1]) - round(newcomers * share[i] / share[-1])
            joining = [(False, arrivals)]
            if i < regular_days:
                joining.append((True, regulars // regular_days + (i < regulars % regular_days)))
            for regular, count in joining:
                cohorts.append([i, len(self.visitors), count, regular])
                self.visitors += [self._visitor() for _ in range(count)]
            day: list[tuple[int, int, dict]] = []
            for first, count in ((c[1], c[2]) for c in cohorts if c[0] == i):
                for v in range(first, first + count):  # everyone's first visit, the day they arrive
                    made += self._place(v, day_start, busy, day, cut, seq)
                    seq += 1
            target = round(n_events * share[i + 1] / share[-1])
            tries = 0
            while made < target and tries < 100 * n_events:
                weights = [c[2] * (0.35 if c[3] else 0.6 * (1 + i - c[0]) ** -0.9) for c in cohorts]
                for c in rng.choices(cohorts, weights, k=64):
                    v = c[1] + int(c[2] * rng.random() ** 2)  # some visitors come back far more than others
                    made += self._place(v, day_start, busy, day, cut, seq)
                    seq, tries = seq + 1, tries + 1
                    if made >= target:
                        break
            day += spill
            day.sort(key=lambda e: (e[0], e[1]))
            spill = [e for e in day if e[0] >= day_end]
            for ts, _, event in day:
                if ts >= day_end:
                    break
                if emitted == n_events:
                    return
                event["ts"] = self._iso(ts)
                emitted += 1
                yield event

    def _visitor(self) -> tuple[str, str, float]:
        rng = self.rng
        _, country, offset = rng.choices(COUNTRIES, cum_weights=self.country_weights)[0]
        agent = rng.choices(self.agents, cum_weights=self.agent_weights)[0]
        while True:  # an address of the country no other visitor has (registries split some blocks)
            ip = _ip(rng.choice(self.blocks[country]), rng)
            if ip not in self.addresses and location_of(ip).country == country and not is_datacenter(ip):
                self.addresses.add(ip)
                return ip, agent, offset

    def _place(self, v: int, day_start: int, busy: dict, day: list, cut: int | None, seq: int) -> int:
        """One session of visitor v starting on this day, at an hour of daylight where they
        are, unless it would come within SESSION_GAP of another of theirs; its events are
        added to `day` (as (ts, seq, event)), and their number returned."""
        rng = self.rng
        ip, agent, offset = self.visitors[v]
        local = min(86399.0, max(0.0, rng.gauss(14.5 * 3600, 4 * 3600)))
        start = day_start + int(local - offset * 3600) % 86400
        times, events = self._session(ip, agent, start)
        if cut is not None:
            events = [e for t, e in zip(times, events) if t < cut]
            times = times[: len(events)]
        spans = busy.setdefault(v, [])
        if any(start < end + SESSION_GAP and times[-1] + SESSION_GAP > begin for begin, end in spans):
            return 0
        spans.append((start, times[-1]))
        day.extend((t, seq, e) for t, e in zip(times, events))
        return len(events)

    def _session(self, ip: str, agent: str, start: int) -> tuple[list[int], list[dict]]:
        """A session's events and their times: a landing from the referrer mix, then pages
        of the long tail; or a walk down the signup funnel (/, /pricing, /signup, Signup),
        as far as it goes, with some reading after it."""
        rng = self.rng
        _, referrer, query = rng.choices(REFERRERS, cum_weights=self.referrer_weights)[0]
        if rng.random() < 0.22:
            walk = ["/"]
            for page, chance in (("/pricing", 0.6), ("/signup", 0.6), (SIGNUP, 0.6)):
                if rng.random() >= chance:
                    break
                walk.append(page)
            walk += self._pages(min(int(rng.expovariate(0.8)), 5))
        else:
            views = 1 if rng.random() < 0.5 else min(2 + int(rng.expovariate(0.5)), 30)
            walk = self._pages(views)
        base = f"https://{self.domain}"
        times, events = [], []
        t, url = start, f"{base}{walk[0]}{query}"
        for n, page in enumerate(walk):
            if n:
                t += (
                    rng.randint(3, 40)
                    if page == SIGNUP
                    else min(MAX_STEP, max(MIN_STEP, int(rng.lognormvariate(log(45), 0.9))))
                )
            event = {"url": url, "ip": ip, "user_agent": agent, "name": "pageview"}
            if page == SIGNUP:
                event["url"], event["name"] = f"{base}/signup", SIGNUP
                event["props"] = {"plan": rng.choices(PLANS, PLAN_WEIGHTS)[0]}
            elif n:
                referrer, url = url, f"{base}{page}"
                event["url"] = url
            if referrer:
                event["referrer"] = referrer
            times.append(t)
            events.append(event)
        return times, events

    def _pages(self, n: int) -> list[str]:
        return self.rng.choices(self.pages, cum_weights=self.page_weights, k=n)

    def _iso(self, ts: int) -> str:
        day, seconds = divmod(ts, 86400)
        if (prefix := self._days.get(day)) is None:
            prefix = self._days[day] = datetime.fromtimestamp(day * 86400, UTC).strftime("%Y-%m-%dT")
        hours, rest = divmod(seconds, 3600)
        return f"{prefix}{hours:02}:{rest // 60:02}:{rest % 60:02}Z"


def _blocks(rng: random.Random, per_country: int = 64) -> dict[str, list[int]]:
    """Some /16 blocks of each country's addresses, found by looking random addresses up the
    way Tally does (in the country, in no data centre's range): 64 blocks hold millions of
    addresses, so even the largest country's visitors each get their own."""
    wanted = {country for _, country, _ in COUNTRIES}
    found: dict[str, list[int]] = {country: [] for country in wanted}
    short = set(wanted)
    while short:
        block = rng.getrandbits(16)
        if block in found.get(country := location_of(_ip(block, rng)).country or "", ()):
            continue
        if country in short:
            found[country].append(block)
            if len(found[country]) == per_country:
                short.discard(country)
    return found


def _ip(block: int, rng: random.Random) -> str:
    return f"{block >> 8}.{block & 255}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
