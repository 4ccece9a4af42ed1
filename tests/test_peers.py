"""The peers section's stream (bench/peers/stream.py) is what it says it is."""

from collections import Counter
from datetime import date, datetime, timedelta

import pytest

from analytics.ingest.bots import is_bot
from analytics.ingest.datacenters import is_datacenter
from analytics.ingest.geo import location_of
from bench.peers import stream

LAST = date(2026, 11, 25)
DAYS = 10
EVENTS = 20_000


@pytest.fixture(scope="module")
def events() -> list[dict]:
    return [event for batch in stream.batches(EVENTS, DAYS, last_day=LAST) for event in batch]


def test_it_streams_real_browsers_from_30_countries_in_time_order(events):
    visitors = {(e["ip"], e["user_agent"]) for e in events}
    agents = {agent for _, agent in visitors}
    countries = Counter(location_of(ip).country for ip, _ in visitors)
    assert len(events) == EVENTS
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    assert {e["ts"][:10] for e in events} == {(LAST - timedelta(days=n)).isoformat() for n in range(DAYS)}
    assert len(agents) == 40 and not any(is_bot(agent) for agent in agents)
    assert len(countries) == 30 and None not in countries
    assert not any(is_datacenter(ip) for ip, _ in visitors)
    assert abs(len(visitors) - EVENTS * stream.VISITORS_PER_EVENT) < 0.02 * len(visitors)
    signups = [e for e in events if e["name"] == "Signup"]
    assert 0.015 < len(signups) / EVENTS < 0.025 and {e["props"]["plan"] for e in signups} == set(stream.PLANS)


def test_it_keeps_a_visitors_sessions_apart_by_more_than_any_timeout(events):
    last: dict[tuple, datetime] = {}
    for e in events:
        ts = datetime.fromisoformat(e["ts"])
        previous = last.get((e["ip"], e["user_agent"]))
        if previous is not None:
            gap = (ts - previous).total_seconds()
            assert gap <= stream.MAX_STEP or gap >= stream.SESSION_GAP
        last[(e["ip"], e["user_agent"])] = ts


def test_it_streams_the_same_events_for_the_same_arguments(events):
    again = next(stream.batches(EVENTS, DAYS, last_day=LAST))
    assert again == events[: stream.BATCH]
    assert next(stream.batches(EVENTS, DAYS, seed=1, last_day=LAST)) != again
