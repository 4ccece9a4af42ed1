"""What each bot filter drops on a log that mixes people and bots (issue 37), built from
public data: a real server's access log (data/elastic-apache-logs/, Apache-2.0) and, beside
it, the traffic the filters exist for, made from the vendored lists themselves: referrer
spam (Matomo's hosts) sent with people's User-Agents from homes, a scripted client with a
browser's User-Agent from cloud addresses (the vendored ranges), one visitor flooding the
site from a home address, and the site's own visits (an office network, the admin pages).

Each source goes through the batch API (the checks as ingest makes them) in its own
batches, so each batch's answer says what its source lost and why.
"""

import gzip
import ipaddress
import json
import random
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

LOG = Path(__file__).resolve().parent / "data" / "elastic-apache-logs" / "apache_logs.gz"
DOMAIN = "eval.example"
CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
REASONS = ("user-agent", "datacenter", "referrer-spam", "pattern", "exclusion")


def run(say) -> list[tuple]:
    from django.test import Client

    from analytics.ingest.bots import is_bot
    from analytics.models import ApiKey, Exclusion, Site

    Site.objects.filter(domain=DOMAIN).delete()
    site = Site.objects.create(domain=DOMAIN, timezone="UTC")
    Exclusion.objects.create(site=site, kind="ip", value="192.0.2.0/24")  # (the office)
    Exclusion.objects.create(site=site, kind="path", value="/admin/**")
    key = ApiKey.create(site)
    client = Client()
    real = _log_events()
    start = datetime.fromisoformat(real[0]["ts"])
    people = [agent for agent in dict.fromkeys(e["user_agent"] for e in real) if agent and not is_bot(agent)][:50]
    sources = {
        "real log: page views (semicomplete.com, 2015)": real,
        "referrer spam (Matomo's hosts), people's browsers at home": _spam(start, people),
        "scripted client, browser User-Agent, cloud addresses": _cloud(start),
        "one visitor flooding from home (600 pages in 8 min)": _flood(start),
        "the site's own visits (office network, /admin/)": _own(start, people),
    }
    say(f"bot filters on a mixed log: {sum(map(len, sources.values())):,} events from {len(sources)} sources")
    lines = []
    for name, events in sources.items():
        dropped = Counter()
        counted = 0
        for n in range(0, len(events), 1000):
            answer = client.post(
                "/api/v1/events",
                data=json.dumps(events[n : n + 1000]),
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {key}",
            ).json()
            counted += answer["accepted"]
            dropped.update(answer.get("dropped") or {"user-agent": answer["bots_dropped"]})
            dropped["exclusion"] += answer.get("excluded", 0)
        lines.append((name, len(events), counted, *(dropped[r] for r in REASONS)))
    totals = [sum(line[i] for line in lines) for i in range(1, 3 + len(REASONS))]
    lines.append(("all", *totals))
    return lines


def _log_events() -> list[dict]:
    """The log's page views (GET answered 2xx/304, not a static file), as batch events."""
    from analytics.ingest.logs import LINE, STATIC, parse_time

    events = []
    with gzip.open(LOG, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            match = LINE.match(line)
            if match is None or match["method"] != "GET" or not (match["status"][0] == "2" or match["status"] == "304"):
                continue
            path = match["target"].split("?", 1)[0]
            if not path.startswith("/") or STATIC.search(path):
                continue
            agent = match["agent"] or ""
            event = {
                "url": f"https://{DOMAIN}{match['target']}",
                "ip": match["ip"],
                "user_agent": "" if agent == "-" else agent,  # (none logged: nothing a browser sends)
                "ts": parse_time(match["time"]).isoformat(),
            }
            if match["referrer"] not in (None, "-"):
                event["referrer"] = match["referrer"]
            events.append(event)
    return sorted(events, key=lambda e: e["ts"])


def _homes(rng: random.Random, n: int) -> list[str]:
    """Addresses of no data centre (drawn again until the vendored ranges hold none)."""
    from analytics.ingest.datacenters import is_datacenter

    found = []
    while len(found) < n:
        ip = f"{rng.randrange(1, 223)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        if not is_datacenter(ip) and ipaddress.ip_address(ip).is_global:
            found.append(ip)
    return found


def _spam(start: datetime, people: list[str]) -> list[dict]:
    from analytics.ingest.bots import SPAM_LIST

    rng = random.Random(1)
    hosts = SPAM_LIST.read_text(encoding="utf-8").split()
    homes = _homes(rng, 200)
    return [
        {"url": f"https://{DOMAIN}/", "ip": homes[n], "user_agent": rng.choice(people),
         "referrer": f"https://{rng.choice(hosts)}/", "ts": (start + timedelta(minutes=17 * n)).isoformat()}
        for n in range(200)
    ]  # fmt: skip


def _cloud(start: datetime) -> list[dict]:
    """A scraper on rented servers: an address in each of 60 blocks of the vendored ranges."""
    from analytics.ingest.datacenters import DATA, PROVIDERS

    rng = random.Random(2)
    blocks = [line for name in PROVIDERS for line in (DATA / name / "ipv4.txt").read_text().split()]
    events = []
    for n, block in enumerate(rng.sample(blocks, 60)):
        network = ipaddress.ip_network(block)
        ip = str(network[rng.randrange(network.num_addresses)])
        for k in range(5):
            events.append({"url": f"https://{DOMAIN}/blog/{n}/{k}", "ip": ip, "user_agent": CHROME,
                           "ts": (start + timedelta(hours=n, minutes=3 * k)).isoformat()})  # fmt: skip
    return events


def _flood(start: datetime) -> list[dict]:
    home = _homes(random.Random(3), 1)[0]
    return [
        {"url": f"https://{DOMAIN}/item/{n}", "ip": home, "user_agent": CHROME,
         "ts": (start + timedelta(hours=5, seconds=0.8 * n)).isoformat()}
        for n in range(600)
    ]  # fmt: skip


def _own(start: datetime, people: list[str]) -> list[dict]:
    office = [f"192.0.2.{n}" for n in range(10, 20)]
    homes = _homes(random.Random(4), 10)
    events = [
        {"url": f"https://{DOMAIN}/articles/{n}", "ip": office[n % 10], "user_agent": people[n % len(people)],
         "ts": (start + timedelta(minutes=41 * n)).isoformat()}
        for n in range(40)
    ]  # fmt: skip
    events += [
        {"url": f"https://{DOMAIN}/admin/posts/{n}", "ip": homes[n % 10], "user_agent": people[n % len(people)],
         "ts": (start + timedelta(minutes=53 * n)).isoformat()}
        for n in range(20)
    ]  # fmt: skip
    return sorted(events, key=lambda e: e["ts"])
