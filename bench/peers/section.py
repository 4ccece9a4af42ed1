"""The peers section of `make bench` (issue 38): one stream into Tally (HTTP batch API, as
`make run` serves it) and into ClickHouse (Plausible's tables, bench/peers/clickhouse.py);
then every dashboard question asked of both and of the brute force, in one run.

Reads are timed in this process for both engines (Tally's read API through Django's test
client: server time, no network; chdb in-process): Tally's first run with nothing kept,
its first after the nightly warm-up (queries/warm.py: the parts those runs read, made
again), then the median of WARM more. Each answer's error is against truth.py with the definition its engine uses
(funnels: Tally counts steps by day, ClickHouse in order within the range).
"""

import os
import statistics
import time
from datetime import UTC, datetime, timedelta

from . import stream
from .clickhouse import ClickHousePeer
from .tally import TallyPeer, prepare_site
from .truth import FUNNEL, Question, Truth, questions

WARM = 5
SPAN = 30  # days the questions ask about (the dashboard's default period)


def run(r, redis_url: str, say, start_server, n_events: int) -> dict:
    from analytics import pins
    from analytics.models import DailyMetrics, Site
    from analytics.queries import warm
    from analytics.rollups.jobs import rollup
    from analytics.sites import SiteInfo
    from analytics.store import keys
    from analytics.store.keys import site_prefix

    last_day = datetime.now(UTC).date() - timedelta(days=1)
    say(f"peers: generating {n_events:,} events over 60 days")
    batches = list(stream.batches(n_events, last_day=last_day))
    events = sum(map(len, batches))

    key = prepare_site(stream.DOMAIN, FUNNEL)
    site = Site.objects.get(domain=stream.DOMAIN)
    before = r.info("memory")["used_memory"]
    process, url = start_server("server.front:application", redis_url, "granian")
    first_day = last_day - timedelta(days=59)
    flat = [event for batch in batches for event in batch]
    one = [e for e in flat if e["ts"][:10] == first_day.isoformat()]
    rest = flat[len(one) :]
    try:
        say(f"peers: Tally, {events:,} events through HTTP batches of 1,000 from 2 clients")
        tally = TallyPeer(url, key, stream.DOMAIN)
        tally_load = tally.load(_batches(one))
        rollup(r, site, first_day, first_day)  # (as the first night does: its top values pinned for the next days)
        pins.sync(r, site.pk)
        cpu = _server_cpu(r)
        tally_load += tally.load(_batches(rest))
        server_cpu = _server_cpu(r) - cpu  # (Valkey's own CPU seconds over the rest of the stream)
    finally:
        process.terminate()
        process.wait(10)
    say("peers: Tally's rollup of the days")
    start = time.perf_counter()
    rollup(r, site, first_day, last_day)
    tally_rollup = time.perf_counter() - start
    nights = []
    for _ in range(3):  # (the nightly job's rollup of yesterday, once the history is in)
        start = time.perf_counter()
        rollup(r, site, last_day, last_day)
        nights.append(time.perf_counter() - start)
    night_visitors = DailyMetrics.objects.get(site=site, date=last_day).visitors
    # The state that goes by itself within the hour, whatever the history's size: open
    # visits (keys.sessions: the load's half hours) and the bot check's 10-minute pageview
    # windows (keys.pattern_window: kept 20 minutes), one for each window of the 60 days here.
    passing = [
        k for pattern in ("sess*", "pattern:*") for k in r.scan_iter(match=site_prefix(site.pk) + pattern, count=1000)
    ]
    passing_bytes = sum(r.memory_usage(k, samples=0) or 0 for k in passing)
    tally_bytes = r.info("memory")["used_memory"] - before - passing_bytes  # (visits closed, windows gone)

    seen: list = []
    with ClickHousePeer() as clickhouse:
        say(f"peers: ClickHouse, {events:,} events enriched in Python, INSERTs of 10,000")
        ch_load = clickhouse.load(batches, seen)
        clickhouse_enrich = clickhouse.seconds["enrich"]
        ch_merge = clickhouse.merge()
        ch_bytes = clickhouse.bytes_on_disk()
        truth = Truth(seen)
        say("peers: the questions, of both engines and the brute force")
        span = questions(last_day, SPAN)[0].args
        floor = _timed(tally.floor, Question("floor", "floor", span, {}))[1]
        # Each question once with nothing kept (yesterday's readers), then the night's
        # warm-up, as analytics.tasks runs it after the rollup: the parts dropped (a new
        # day's heads have none), made again from the reads noted, then the first view.
        cold = {q.label: _once(getattr(tally, q.method), q)[0] for q in questions(last_day, SPAN)}
        parts = list(r.scan_iter(match=keys.kept(site.pk, "*", "*"), count=1000))
        for at in range(0, len(parts), 1000):
            r.unlink(*parts[at : at + 1000])
        start = time.perf_counter()
        warmed = warm.warm(r, SiteInfo.from_model(site))
        warm_up = time.perf_counter() - start
        reads = []
        for q in questions(last_day, SPAN):
            want = getattr(truth, q.method)(*q.args, **q.kwargs)
            tally_want = truth.funnel(*q.args, by_day=True) if q.method == "funnel" else want
            t_first, t_median, t_answer = _timed(getattr(tally, q.method), q)
            c_first, c_median, c_answer = _timed(getattr(clickhouse, q.method), q)
            if error(tally_want, t_answer) != "exact" and os.environ.get("BENCH_PEERS_SHOW"):
                say(f"{q.label}: truth {str(tally_want)[:300]}\n   Tally {str(t_answer)[:300]}")
            reads.append(
                (
                    q.label,
                    f"{cold[q.label]:.1f}",
                    f"{t_first:.1f}",
                    f"{t_median:.1f}",
                    f"{c_first:.1f}",
                    f"{c_median:.1f}",
                    f"{t_median / c_median:.2f}",
                    f"{floor / c_median:.2f}",
                    error(tally_want, t_answer) + (" (visits)" if q.args[:1] == ("exit_page",) else ""),
                    error(want, c_answer),
                )
            )
    writes = [
        ("events/s, HTTP batches of 1,000 from 2 clients (Tally) / enrich + INSERT 10,000 (ClickHouse)",
         f"{events / tally_load:,.0f}", f"{events / ch_load:,.0f}", f"{ch_load / tally_load:.2f}"),
        ("rollup of the 60 days (Tally) / OPTIMIZE FINAL (ClickHouse), s",
         f"{tally_rollup:.1f}", f"{ch_merge:.1f}", f"{tally_rollup / ch_merge:.1f}" if ch_merge else ""),
        (f"nightly rollup of the last day ({night_visitors:,} visitors; a {last_day:%A}), median of 3, s",
         f"{statistics.median(nights):.3f}", "", ""),
        (f"nightly warm-up of the breakdowns read ({len(warmed)} parts: queries/warm.py), s",
         f"{warm_up:.3f}", "", ""),
        ("CPU µs per event: Valkey's (Tally) / the enrichment both run (ClickHouse's column)",
         f"{1e6 * server_cpu / len(rest):.0f}", f"{1e6 * clickhouse_enrich / events:.0f}", ""),
        ("bytes per event: Redis used_memory, visits closed and bot windows gone (Tally) / on disk (ClickHouse)",
         f"{tally_bytes / events:.0f}", f"{ch_bytes / events:.0f}", f"{tally_bytes / ch_bytes:.2f}"),
    ]  # fmt: skip
    return {
        "events": events,
        "visitors": len({e.user_id for e in seen}),
        "reads": reads,
        "writes": writes,
        "floor": floor,
    }


def _server_cpu(r) -> float:
    cpu = r.info("cpu")
    return float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])


def _batches(events: list[dict], size: int = 1000) -> list[list[dict]]:
    return [events[i : i + size] for i in range(0, len(events), size)]


def _once(method, q) -> tuple[float, object]:
    """One run: (ms, the answer)."""
    start = time.perf_counter()
    answer = method(*q.args, **q.kwargs)
    return (time.perf_counter() - start) * 1000, answer


def _timed(method, q) -> tuple[float, float, object]:
    """(first run ms, median of WARM more ms, the answer)."""
    first, answer = _once(method, q)
    return first, statistics.median(_once(method, q)[0] for _ in range(WARM)), answer


def error(want, got) -> str:
    """How far an answer is from the truth: "exact", or the largest relative error of a
    number both give; a top list that ranks other rows says how many of the truth's it
    has ("9/10 rows"), an answer without some numbers says which it has ("visitors only")."""
    notes = []
    if isinstance(want, dict) and any(got.get(k) is None for k in want):
        kept = [k for k in want if got.get(k) is not None]
        notes.append(f"{', '.join(kept)} only")
        want, got = {k: want[k] for k in kept}, {k: got[k] for k in kept}
    if _is_rows(want):
        found = dict(got or [])
        shared = [value for value, _ in want if value in found]
        if len(shared) < len(want):
            notes.append(f"{len(shared)}/{len(want)} rows")
        want, got = [(v, n) for v, n in want if v in found], [(v, found[v]) for v, _ in want if v in found]
    pairs = list(_numbers(want, got))
    worst = max((abs(g - w) / w if w else float(g != w) for w, g in pairs), default=0.0)
    text = "exact" if worst == 0 else f"{100 * worst:.2f}%"
    return ", ".join([text, *notes])


def _is_rows(value) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], tuple) and len(value[0]) == 2


def _numbers(want, got):
    if isinstance(want, dict):
        for k, w in want.items():
            yield from _numbers(w, (got or {}).get(k, 0))
    elif _is_rows(want):
        found = dict(got or [])
        for value, w in want:
            yield w, found.get(value, 0)
    elif isinstance(want, (list, tuple)):
        got = list(got or [])
        for n, w in enumerate(want):
            if not isinstance(w, (int, float, list, tuple, dict)):
                continue  # (a cohort's date)
            yield from _numbers(w, got[n] if n < len(got) else 0)
    elif isinstance(want, (int, float)):
        yield want, got if isinstance(got, (int, float)) else 0
