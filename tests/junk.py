"""The worst an anonymous client can send: events with everything it controls random (path,
referrer, UTM tags, screen, event name, ten property names and values), each from a new
visitor. tests/test_quotas.py floods at test scale; bench/quota_bench.py at 100,000."""

import time

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.ingest.visit import visit_attrs


def flood(r, info, rng, events: int, now) -> None:
    """`events` such events for the site `info`, at `now`, through ingest in calls of 100."""

    def junk() -> str:
        return f"{rng.getrandbits(64):016x}"

    for _ in range(0, events, 100):
        hits = []
        for _ in range(100):
            attrs = visit_attrs(
                info.domain,
                f"https://{info.domain}/{junk()}?utm_source={junk()}&utm_campaign={junk()}",
                f"https://{junk()}.example/{junk()}",
                "Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0",
                None,
                rng.randrange(300, 4000),
            )
            name = "pageview" if rng.random() < 0.5 else f"e{junk()}"
            props = tuple((f"p{junk()}", junk()) for _ in range(10)) if name != "pageview" else ()
            hits.append(
                Hit(now, f"/{junk()}", name, identity_source(None, junk(), None, None), attrs=attrs, props=props)
            )
        record(r, info, hits, now=now)


def used_memory(r) -> int:
    """INFO's used_memory once the server has freed what it frees in the background."""
    while r.info("memory").get("lazyfree_pending_objects", 0):
        time.sleep(0.01)
    return r.info("memory")["used_memory"]
