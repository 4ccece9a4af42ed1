"""What keeping bots out costs an event at ingest (issue 37): the batch path (validate,
check, record) with every check on beside the same path with every check off, on the same
clean events in the same run, and each check alone.

The events are people's (real browsers' User-Agents from the demo's mix, addresses outside
every data-centre range, referrers off the spam list): the worst case for the checks'
cost, since every check runs to its end and nothing is dropped (a dropped event costs the
record call nothing).
"""

import random
import statistics
import time
from dataclasses import replace
from datetime import UTC, datetime

RUNS = 3


def run(r, say, site, bodies: list[bytes]) -> list[tuple]:
    import orjson

    from analytics.api.ingest import _parse_batch, batch_hits
    from analytics.ingest import bots, crawlers, datacenters, exclusions, record
    from analytics.ingest.checks import Checks

    clean = [orjson.dumps(_people(orjson.loads(body))) for body in bodies]
    events = sum(len(orjson.loads(body)) for body in clean)
    rules = (("ip", "192.0.2.0/24"), ("ip", "2001:db8::/32"), ("path", "/admin/**"), ("host", "staging.bench.example"))
    on = replace(site, exclusions=rules)
    off = replace(site, exclusions=(), drop_crawlers=False, drop_datacenters=False, drop_referrer_spam=False,
                  pattern_pageviews=0)  # fmt: skip

    def batch_path(checked) -> float:
        r.execute_command("FLUSHALL", "SYNC")
        now = datetime.now(UTC)
        start = time.perf_counter()
        for body in clean:
            items, rejected = _parse_batch(body)
            hits = [hit for _, hit in batch_hits(checked, items, now, rejected)]
            record(r, checked, hits, now=now)
        return events / (time.perf_counter() - start)

    say(f"bot checks: {events:,} people's events through the batch path, checks off and on, {RUNS} runs each")
    rates = {"off": [], "on": []}
    for _ in range(RUNS):
        for name, checked in (("off", off), ("on", on)):
            rates[name].append(batch_path(checked))
    without, with_ = statistics.median(rates["off"]), statistics.median(rates["on"])
    per_event = (1 / with_ - 1 / without) * 1e6

    items = [item for body in clean for _, item in _parse_batch(body)[0]]
    agents = list({item["user_agent"] for item in items})
    lines = [
        ("batch path (validate, check, record), every check off", f"{without:,.0f}", "", "1.00x"),
        ("batch path, every check on (4 exclusions, rate screen)", f"{with_:,.0f}", f"{per_event:+.1f}",
         f"{with_ / without:.2f}x"),
    ]  # fmt: skip
    for label, fn, inputs in (
        ("Checks.dropped(): all four edge checks, as ingest asks", lambda item: Checks(
            item["user_agent"], item["ip"], item.get("referrer")).dropped(on, "/page", item["url"]), items),
        ("  crawler User-Agent, cached (real traffic repeats them)", bots.is_bot, [i["user_agent"] for i in items]),
        ("  crawler-user-agents list alone, uncached", crawlers.listed, agents),
        ("  crawlerdetect alone, uncached", bots._detector._check_crawler, agents),  # (isCrawler() has a cache)
        ("  data-centre address (IPv4 and IPv6, bisect)", datacenters.is_datacenter, [i["ip"] for i in items]),
        ("  referrer spam", bots.referrer_spam, [i.get("referrer") for i in items]),
        ("  exclusions, 4 rules", lambda i: exclusions.excluded(rules, i["ip"], "/page", i["url"]), items),
    ):  # fmt: skip
        lines.append((label, "", f"{_micro(fn, inputs):.2f}", ""))
    lines.append(("the rate screen: one script call a batch (patterns.py)", "", f"{_screen(r, on, clean):.2f}", ""))
    return lines


def _screen(r, site, bodies: list[bytes]) -> float:
    """µs an event of patterns.screen() over the batches (its digests included, which
    record() then does not work out again)."""
    from analytics.api.ingest import _parse_batch, batch_hits
    from analytics.ingest import patterns

    now = datetime.now(UTC)
    batches = []
    for body in bodies:
        items, rejected = _parse_batch(body)
        batches.append([hit for _, hit in batch_hits(site, items, now, rejected)])
    r.execute_command("FLUSHALL", "SYNC")
    start = time.perf_counter()
    for hits in batches:
        patterns.screen(r, site, hits, now)
    return (time.perf_counter() - start) / sum(map(len, batches)) * 1e6


def _people(events: list[dict]) -> list[dict]:
    """The events with addresses no data centre holds (a home's, drawn again until clean)."""
    from analytics.ingest.datacenters import is_datacenter

    rng = random.Random(7)
    for event in events:
        while is_datacenter(event["ip"]):
            event["ip"] = f"{rng.randrange(1, 223)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        if rng.random() < 0.1:
            event["ip"] = f"2a02:c7c:{rng.randrange(65536):x}::{rng.randrange(1, 65536):x}"  # (a UK ISP's IPv6)
    return events


def _micro(fn, inputs: list) -> float:
    """µs a call, the median of 5 passes over the inputs (uncached functions see each input once a pass)."""
    passes = []
    for _ in range(5):
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()
        start = time.perf_counter()
        for x in inputs:
            fn(x)
        passes.append((time.perf_counter() - start) / len(inputs) * 1e6)
    return statistics.median(passes)
