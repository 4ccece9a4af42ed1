"""The live counter's engine: one subscription per site and process, fanned out."""
import asyncio
import time
from datetime import UTC, datetime

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.queries import live
from analytics.sites import SiteInfo


def test_every_listener_gets_the_new_count_after_a_tick(site, r):
    info = SiteInfo.from_model(site)

    async def scenario():
        streams = [live.visitor_counts(info) for _ in range(3)]
        first = [await anext(s) for s in streams]
        assert first == [0, 0, 0]
        assert len(live._channels) == 1  # one subscription for the three
        await asyncio.sleep(0.2)
        await asyncio.to_thread(record, r, info, [Hit(None, "/", "pageview", identity_source(None, "a", None, None))])

        async def until_one(stream):
            while (count := await anext(stream)) != 1:
                pass
            return count

        later = await asyncio.wait_for(asyncio.gather(*(until_one(s) for s in streams)), 5)
        for s in streams:
            await s.aclose()
        await asyncio.sleep(0.05)
        return later

    later = asyncio.run(scenario())
    assert later == [1, 1, 1]
    assert live._channels == {}


def test_a_tick_is_published_at_most_once_a_second(site, r):
    info = SiteInfo.from_model(site)
    pubsub = r.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(f"tally:{{{site.pk}}}:live")
    for n in range(5):
        record(r, info, [Hit(None, "/", "pageview", identity_source(None, str(n), None, None))], now=datetime.now(UTC))
    messages, deadline = [], time.monotonic() + 0.5
    while time.monotonic() < deadline:
        message = pubsub.get_message(timeout=0.1)
        if message is not None:
            messages.append(message)
    assert len(messages) == 1
