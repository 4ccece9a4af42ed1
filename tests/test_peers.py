"""The peers section's yardstick (bench/peers/): the stream is what it says, the brute force
keeps its definitions, and on a small stream the ClickHouse peer answers every question of
the dashboard exactly as the brute force does (uniqExact), and within 2% with uniq."""

from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest

from analytics.ingest.bots import is_bot
from analytics.ingest.datacenters import is_datacenter
from analytics.ingest.geo import location_of
from bench.peers import stream
from bench.peers.enrich import Event, Visit
from bench.peers.truth import FUNNEL, Truth, questions

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


def _event(minute: int, user: int, path: str, name: str = "pageview", source: str = "Google") -> Event:
    visit = Visit(*[""] * len(Visit._fields))._replace(source=source, country="DE")
    ts = int(datetime(2026, 11, 20, tzinfo=UTC).timestamp()) + 60 * minute
    return Event(ts, user, name, path, (), True, visit)


def test_the_truth_cuts_sessions_after_30_minutes_and_keeps_their_first_source():
    truth = Truth(
        [
            _event(0, 1, "/"),
            _event(30, 1, "/pricing", source="Direct / None"),  # (30 minutes: the same session)
            _event(61, 1, "/docs", source="Reddit"),  # (31: a new one)
            _event(5, 2, "/"),
        ]
    )
    day = date(2026, 11, 20)
    assert [(s.user_id, s.entry_page, s.exit_page, s.end - s.start, s.bounce) for s in truth.sessions] == [
        (1, "/", "/pricing", 1800, False),
        (2, "/", "/", 0, True),
        (1, "/docs", "/docs", 0, True),
    ]
    assert truth.breakdown("source", day, day) == [("Google", 2), ("Reddit", 1)]
    assert truth.aggregate(day, day, filters=(("page", "/pricing"),)) == {
        "visitors": 1,
        "visits": 1,
        "pageviews": 1,
        "bounce_rate": 0.0,  # (only the visits that entered at /pricing: none)
        "visit_duration": 1800.0,
    }


def test_the_truth_counts_a_funnel_step_only_after_the_one_before():
    steps = (("page", "/"), ("page", "/pricing"), ("goal", "Signup"))
    truth = Truth(
        [
            _event(0, 1, "/pricing"),
            _event(1, 1, "/"),  # (pricing before home: visitor 1 stops at step 1)
            _event(0, 2, "/"),
            _event(1, 2, "/pricing"),
            _event(2, 2, "/signup", name="Signup"),
        ]
    )
    day = date(2026, 11, 20)
    assert truth.funnel(steps, day, day) == [2, 1, 1]
    assert truth.funnel(steps, day, day, by_day=True) == [2, 2, 1]  # (Tally's: any order within a day)


@pytest.fixture(scope="module")
def loaded(events):
    pytest.importorskip("chdb")  # (make setup installs it: bench/requirements-peers.txt)
    from bench.peers.clickhouse import ClickHousePeer

    seen: list[Event] = []
    with ClickHousePeer() as peer:
        peer.load([events[i : i + stream.BATCH] for i in range(0, len(events), stream.BATCH)], seen)
        peer.merge()
        yield peer, Truth(seen)


def test_the_clickhouse_peer_drops_nothing_and_collapses_its_sessions(loaded):
    peer, truth = loaded
    assert (peer.events, peer.dropped) == (EVENTS, 0)
    assert peer._rows("SELECT count(), sum(sign) FROM sessions_v2") == [[len(truth.sessions), len(truth.sessions)]]
    assert peer.bytes_on_disk() > 0


@pytest.mark.parametrize("span", [DAYS, 7])  # (7: sessions that cross the range's first midnight)
def test_the_clickhouse_peer_answers_every_question_as_the_brute_force_does(loaded, span):
    peer, truth = loaded
    for q in questions(LAST, span):
        want = getattr(truth, q.method)(*q.args, **q.kwargs)
        assert getattr(peer, q.method)(*q.args, **q.kwargs, exact=True) == want, q.label
        _assert_close(getattr(peer, q.method)(*q.args, **q.kwargs), want, q.label)
    assert truth.funnel(FUNNEL, LAST - timedelta(days=span - 1), LAST)[-1] > 0


def _assert_close(got, want, label: str, rel: float = 0.02):
    """uniq's answer within 2% of the exact one: numbers, the rows of a breakdown by value
    (the values both list), a timeseries' or retention's rows in order."""
    if isinstance(want, dict):
        assert got.keys() == want.keys(), label
        for key in want:
            assert got[key] == pytest.approx(want[key], rel=rel), f"{label}: {key}"
    elif isinstance(want, list) and want and isinstance(want[0], tuple) and isinstance(want[0][0], str):
        exact = dict(want)
        shared = [(value, n) for value, n in got if value in exact]
        assert len(shared) >= len(want) - 2, label
        for value, n in shared:
            assert n == pytest.approx(exact[value], rel=rel, abs=5 if rel > 0.02 else 0), f"{label}: {value}"
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), label
        for a, b in zip(got, want):
            _assert_close(a, b, label, rel)
    elif isinstance(want, (int, float)):
        assert got == pytest.approx(want, rel=rel), label
    else:
        assert got == want, label


# Where Tally counts another thing than Plausible's definitions (truth.py), on purpose: a
# visitor's other visits of a day count under a page filter (its day's bitmap, not the
# visits that viewed the page), exit pages are counted by visit, and an aggregate under two
# filters has visitors only (docs/exploring.md). Those questions are measured by `make bench`
# (their error column), not held to the truth here.
TALLY_OWN_DEFINITIONS = {
    "exit pages",
    "page==/pricing: aggregate",
    "page==/pricing: sources",
    "country==DE, source==Google: top pages",
    "country==DE, page==/pricing: aggregate",
}


def test_tally_answers_as_the_brute_force_does_where_it_counts_the_same_thing(events, db, client, r):
    """The same stream through the batch API and the rollup: retention, the chart's visitors,
    the funnel (by day, as Tally counts it) and every visitor count it calls exact, exact;
    visits within a session or two; breakdown rows within their HLLs' bound. Where Tally
    says ≈ under a filter (a page or a country without a visitor bitmap on some day: only
    the pinned top values and each day's first `segment_values` get one), its
    inclusion-exclusion of small HLLs is off by a few visitors (21 for 25 here, 83 for 95
    before the first day's top values were pinned): held to 20% or 5, and measured by
    `make bench` (issue 38's exactness target: such rows should become exact)."""
    from analytics import pins
    from analytics.models import Site
    from analytics.rollups.jobs import rollup
    from bench.peers.enrich import enrich
    from bench.peers.tally import TallyPeer, prepare_site

    key = prepare_site(stream.DOMAIN, FUNNEL)
    site, first = Site.objects.get(domain=stream.DOMAIN), LAST - timedelta(days=DAYS - 1)
    seen: list[Event] = []
    for day_one in (True, False):  # (the first day, rolled up as each night is: its top values pinned)
        part = [e for e in events if (e["ts"][:10] == first.isoformat()) is day_one]
        for i in range(0, len(part), stream.BATCH):
            batch = part[i : i + stream.BATCH]
            seen += enrich(batch, stream.DOMAIN)[0]
            answer = client.post(
                "/api/v1/events", batch, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
            )
            assert answer.json()["accepted"] == len(batch)
        rollup(r, site, first, first if day_one else LAST)
        pins.sync(r, site.pk)  # (as the nightly rollup does: the day's top values keep bitmaps the next)
    seen.sort(key=lambda e: e.ts)
    truth, tally = Truth(seen), TallyPeer("http://testserver", key, stream.DOMAIN)
    for q in questions(LAST, DAYS):
        if q.label in TALLY_OWN_DEFINITIONS:
            continue
        got = getattr(tally, q.method)(*q.args, **q.kwargs)
        if q.method == "funnel":
            assert got == truth.funnel(*q.args, by_day=True), q.label
        elif q.method in ("retention", "timeseries"):
            assert got == getattr(truth, q.method)(*q.args, **q.kwargs), q.label
        elif q.method == "aggregate":
            want = truth.aggregate(*q.args, **q.kwargs)
            if tally.estimate:  # (a filter value without a bitmap some day: Tally says ≈, HLLs' inclusion-exclusion)
                assert got["visitors"] == pytest.approx(want["visitors"], rel=0.20), q.label
            else:
                assert got["visitors"] == want["visitors"], q.label
            assert got["pageviews"] == want["pageviews"], q.label
            assert abs(got["visits"] - want["visits"]) <= 0.005 * want["visits"], q.label  # (visits across midnight)
            assert abs(got["bounce_rate"] - want["bounce_rate"]) <= 1, q.label  # (Tally's are whole percents)
            assert abs(got["visit_duration"] - want["visit_duration"]) <= 1, q.label
        else:  # (HLL unions: 2%; where Tally says ≈, a filter value without a bitmap some day, 10%: see below)
            _assert_close(got, getattr(truth, q.method)(*q.args, **q.kwargs), q.label, 0.20 if tally.estimate else 0.02)


def test_the_size_curve_seeds_the_id_map_through_the_maps_own_code(events, db, client, r, monkeypatch):
    """bench/size_bench.py: a site of `ever` visitors-ever is a map holding ids 0..ever-1
    (several seeding calls, the map's buckets split as ingest splits them), their first
    day recorded; the stream's visitors then get the ids after them, the seeded ones kept."""
    from analytics.models import Site
    from analytics.store import idmap, keys
    from bench import size_bench
    from bench.peers.tally import prepare_site

    monkeypatch.setattr(size_bench, "SEED_CALL", 700)
    key = prepare_site(stream.DOMAIN, FUNNEL)
    site = Site.objects.get(domain=stream.DOMAIN)
    size_bench.seed(r, site.pk, 2_000, datetime(2026, 9, 1, tzinfo=UTC))
    seeded = idmap.all_ids(r, site.pk)
    assert sorted(seeded.values()) == list(range(2_000))
    assert int(r.get(keys.visitor_id_buckets(site.pk))) > 1
    assert r.zrange(keys.first_days_runs(site.pk), 0, -1) == [
        f"0:{(date(2026, 9, 1) - date(2000, 1, 1)).days}".encode()
    ]
    batch = events[: stream.BATCH]
    answer = client.post("/api/v1/events", batch, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert answer.json()["accepted"] == len(batch)
    after = idmap.all_ids(r, site.pk)
    assert {d: after[d] for d in seeded} == seeded
    assert len(after) > len(seeded) and min(i for d, i in after.items() if d not in seeded) == 2_000
