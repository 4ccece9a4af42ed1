"""Plausible's engine as Plausible runs it, as a peer: an embedded ClickHouse (chdb) holding
Plausible's `events_v2` and `sessions_v2`, loaded the way Plausible ingests, asked the
dashboard's questions the way its query builder asks them.

    with ClickHousePeer() as peer:
        seconds = peer.load(stream.batches(200_000))
        peer.merge()
        peer.aggregate(start, end, filters=(("country", "DE"),))

`python bench/peers/clickhouse.py N` loads N events of the stream and prints what the peers
table reads: events/s, bytes per event on disk, each question's first and warm median ms.

*The tables* are Plausible's, from its migrations (plausible/analytics,
priv/data_migrations/NumericIDs/sql/create-events-v2.sql.eex and -sessions-v2, then
priv/ingest_repo/migrations up to 2025: the session columns and codecs of 2024-02,
VersionedCollapsingMergeTree(sign, events) for sessions, the minmax index on their
timestamp, exit_page_hostname, click_id_param, scroll_depth, engagement_time, the ALIAS
columns named like the API's dimensions): the same columns, codecs, partitions, sort and
primary keys and SAMPLE BY. Left out: the `batch` and replay columns of late 2025 (bookkeeping
of failed inserts), and `acquisition_channel` is written (Tally's channel) rather than
MATERIALIZED by Plausible's SQL function. No query samples: Plausible samples only very
large sites.

*Loading* (load()): each batch enriched by Tally's functions (enrich.py); then, per event,
Plausible's session cache (lib/plausible/session/cache_store.ex): the visitor's session
continues if their last event is at most 30 whole minutes old (new_session_from_event /
update_session: entry and exit page, bounce, duration, pageviews, events), and every update
writes the old row again with sign -1 and the new one with sign 1; the event gets the
session's id and its visit fields (ClickhouseEventV2.merge_session). Rows go in by INSERT of
10,000 events (and their session rows), as JSON rows. merge() is OPTIMIZE ... FINAL: the
session rows collapse to one a session. Plausible's queries read without FINAL, so their
answers assume merged tables: ask after merge().

*Queries*: one SQL statement each, as Plausible.Stats.SQL.QueryBuilder writes it (table
chosen by TableDecider, WhereBuilder's ranges and filters, the sessions join under a visit
filter and the events join under an event filter), `uniq(user_id)` as Plausible counts, or
`uniqExact` with exact=True. Answers are normalized to the shapes truth.py returns, and
every definition is the one written there. Three questions Plausible does not ask the same
way: timeseries reads events_v2, as Plausible's main graph did until its v2 queries moved
visitors-only queries to sessions_v2 (whose day is a session's last event's); retention
(Plausible has none) is one query over events_v2; funnels use windowFunnel over the range
(Plausible's is 24 hours).
"""

import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from pathlib import Path

import orjson

if __name__ == "__main__":  # (run as a script: the project on the path, Django's settings for the geo lookup)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()

from bench.peers import stream
from bench.peers.enrich import Event, Visit, enrich
from bench.peers.truth import (
    DIRECT,
    NOT_SET,
    PAGEVIEW,
    VISIT_DIMENSIONS,
    day_start,
    days,
    questions,
    rates,
    split,
)

SITE = 1
INSERT_ROWS = 10_000

EVENTS_V2 = """
CREATE TABLE events_v2
(
    timestamp DateTime CODEC(Delta(4), LZ4),
    name LowCardinality(String),
    site_id UInt64,
    user_id UInt64,
    session_id UInt64,
    hostname String CODEC(ZSTD(3)),
    pathname String CODEC(ZSTD(3)),
    referrer String CODEC(ZSTD(3)),
    referrer_source String CODEC(ZSTD(3)),
    country_code FixedString(2),
    screen_size LowCardinality(String),
    operating_system LowCardinality(String),
    browser LowCardinality(String),
    utm_medium String CODEC(ZSTD(3)),
    utm_source String CODEC(ZSTD(3)),
    utm_campaign String CODEC(ZSTD(3)),
    `meta.key` Array(String) CODEC(ZSTD(3)),
    `meta.value` Array(String) CODEC(ZSTD(3)),
    browser_version LowCardinality(String),
    operating_system_version LowCardinality(String),
    subdivision1_code LowCardinality(String),
    subdivision2_code LowCardinality(String),
    city_geoname_id UInt32,
    utm_content String CODEC(ZSTD(3)),
    utm_term String CODEC(ZSTD(3)),
    revenue_reporting_amount Nullable(Decimal64(3)),
    revenue_reporting_currency FixedString(3),
    revenue_source_amount Nullable(Decimal64(3)),
    revenue_source_currency FixedString(3),
    click_id_param LowCardinality(String),
    scroll_depth UInt8,
    engagement_time UInt32,
    acquisition_channel LowCardinality(String),
    source String ALIAS referrer_source,
    device LowCardinality(String) ALIAS screen_size,
    os LowCardinality(String) ALIAS operating_system,
    country FixedString(2) ALIAS country_code
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(timestamp)
PRIMARY KEY (site_id, toDate(timestamp), name, user_id)
ORDER BY (site_id, toDate(timestamp), name, user_id, timestamp)
SAMPLE BY user_id
SETTINGS index_granularity = 8192
"""

SESSIONS_V2 = """
CREATE TABLE sessions_v2
(
    session_id UInt64,
    sign Int8,
    site_id UInt64,
    user_id UInt64,
    hostname String CODEC(ZSTD(3)),
    timestamp DateTime CODEC(Delta(4), LZ4),
    start DateTime CODEC(Delta(4), LZ4),
    is_bounce UInt8,
    entry_page String CODEC(ZSTD(3)),
    exit_page String CODEC(ZSTD(3)),
    pageviews Int32,
    events Int32,
    duration UInt32,
    referrer String CODEC(ZSTD(3)),
    referrer_source String CODEC(ZSTD(3)),
    country_code LowCardinality(FixedString(2)),
    screen_size LowCardinality(String),
    operating_system LowCardinality(String),
    browser LowCardinality(String),
    utm_medium String CODEC(ZSTD(3)),
    utm_source String CODEC(ZSTD(3)),
    utm_campaign String CODEC(ZSTD(3)),
    browser_version LowCardinality(String),
    operating_system_version LowCardinality(String),
    subdivision1_code LowCardinality(String),
    subdivision2_code LowCardinality(String),
    city_geoname_id UInt32,
    utm_content String CODEC(ZSTD(3)),
    utm_term String CODEC(ZSTD(3)),
    transferred_from String,
    `entry_meta.key` Array(String) CODEC(ZSTD(3)),
    `entry_meta.value` Array(String) CODEC(ZSTD(3)),
    exit_page_hostname String,
    click_id_param LowCardinality(String),
    acquisition_channel LowCardinality(String),
    source String ALIAS referrer_source,
    device LowCardinality(String) ALIAS screen_size,
    os LowCardinality(String) ALIAS operating_system,
    country LowCardinality(FixedString(2)) ALIAS country_code,
    INDEX minmax_timestamp timestamp TYPE minmax GRANULARITY 1
)
ENGINE = VersionedCollapsingMergeTree(sign, events)
PARTITION BY toYYYYMM(start)
PRIMARY KEY (site_id, toDate(start), user_id, session_id)
ORDER BY (site_id, toDate(start), user_id, session_id)
SAMPLE BY user_id
SETTINGS index_granularity = 8192
"""

# The columns a session gives its events (merge_session), in the order both INSERTs write them.
VISIT_COLUMNS = (
    "hostname",
    "referrer",
    "referrer_source",
    "acquisition_channel",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
    "browser",
    "browser_version",
    "operating_system",
    "operating_system_version",
    "screen_size",
    "country_code",
    "subdivision1_code",
)
EVENT_COLUMNS = ("timestamp", "name", "site_id", "user_id", "session_id", "pathname", "meta.key", "meta.value")
SESSION_COLUMNS = (
    "session_id",
    "sign",
    "site_id",
    "user_id",
    "timestamp",
    "start",
    "is_bounce",
    "entry_page",
    "exit_page",
    "exit_page_hostname",
    "pageviews",
    "events",
    "duration",
    "entry_meta.key",
    "entry_meta.value",
)
# A session row is SESSION_COLUMNS then VISIT_COLUMNS; these are the places update_session changes.
SIGN, TIMESTAMP, START, IS_BOUNCE, ENTRY, EXIT, EXIT_HOST, PAGEVIEWS, EVENTS, DURATION = 1, 4, 5, 6, 7, 8, 9, 10, 11, 12

# The dashboard's dimensions as columns: visit ones of sessions_v2 (shown as truth.shown()
# shows them), event ones of events_v2.
_BLANK = {"source": DIRECT, "referrer": DIRECT}
_VISIT_COLUMN = {"channel": "acquisition_channel"}


def _visit_expression(dimension: str) -> str:
    column = f"s.{_VISIT_COLUMN.get(dimension, dimension)}"
    return f"if(empty({column}), {_q(_BLANK.get(dimension, NOT_SET))}, toString({column}))"


def _visit_condition(dimension: str, value: str, alias: str = "") -> str:
    """Plausible's WhereBuilder.filter_field for `is`, with db_field_val's blanks."""
    stored = "" if value in (DIRECT, NOT_SET) else value
    return f"{alias}{_VISIT_COLUMN.get(dimension, dimension)} = {_q(stored)}"


def _event_condition(dimension: str, value: str) -> str:
    return f"e.{'pathname' if dimension == 'page' else 'name'} = {_q(value)}"


def _q(text: str) -> str:
    """A ClickHouse string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@lru_cache(maxsize=50_000)
def _visit_values(v: Visit) -> tuple:
    """A visit's VISIT_COLUMNS values as Plausible stores them: no source is ""."""
    return (
        v.hostname,
        "" if v.referrer == DIRECT else v.referrer,
        "" if v.source == DIRECT else v.source,
        v.channel,
        v.utm_source,
        v.utm_medium,
        v.utm_campaign,
        v.utm_term,
        v.utm_content,
        v.browser,
        v.browser_version,
        v.os,
        v.os_version,
        v.device,
        v.country,
        v.region,
    )


class ClickHousePeer:
    """One site's events_v2 and sessions_v2 in a chdb session over a temporary directory,
    removed by close(). chdb embeds one server per process: one peer at a time."""

    def __init__(self, domain: str = stream.DOMAIN, seed: int = 38):
        from chdb import session  # (a bench and test dependency: bench/requirements-peers.txt)

        self.domain = domain
        self.path = tempfile.mkdtemp(prefix="tally-peers-clickhouse-")
        self.session = session.Session(self.path)
        self.session.query("SET session_timezone = 'UTC'")
        self.session.query(EVENTS_V2)
        self.session.query(SESSIONS_V2)
        self.random = random.Random(seed)  # session ids (Plausible's are random 64-bit numbers)
        self.cache: dict[int, list] = {}  # user_id -> their last session's row (the session cache)
        self.events = self.dropped = 0
        self.seconds = {"enrich": 0.0, "sessions": 0.0, "insert": 0.0}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.session.close()
        shutil.rmtree(self.path, ignore_errors=True)

    # --- writing

    def load(self, batches: Iterable[list[dict]], seen: list[Event] | None = None) -> float:
        """Enrich, sessionize and insert every batch; the seconds that took (not the time
        `batches` takes to make them). The enriched events are appended to `seen` when
        given (the truth reads the same)."""
        before = sum(self.seconds.values())
        event_rows: list[bytes] = []
        session_rows: list[bytes] = []
        for batch in batches:
            t0 = time.perf_counter()
            events, dropped = enrich(batch, self.domain)
            t1 = time.perf_counter()
            self.dropped += dropped
            self.events += len(events)
            if seen is not None:
                seen.extend(events)
            for e in events:
                self._on_event(e, event_rows, session_rows)
            self.seconds["enrich"] += t1 - t0
            self.seconds["sessions"] += time.perf_counter() - t1
            if len(event_rows) >= INSERT_ROWS:
                self._insert(event_rows, session_rows)
        self._insert(event_rows, session_rows)
        return sum(self.seconds.values()) - before

    def _on_event(self, e: Event, event_rows: list[bytes], session_rows: list[bytes]):
        """Plausible's CacheStore.on_event for one event, its rows serialized at once."""
        s = self.cache.get(e.user_id)
        pageview = e.name == PAGEVIEW
        keys, values = [k for k, _ in e.props], [v for _, v in e.props]
        if s is not None and (e.ts - s[TIMESTAMP]) // 60 <= 30:  # (Timex.diff in whole minutes)
            s[SIGN] = -1
            session_rows.append(orjson.dumps(s))
            s[SIGN] = 1
            s[TIMESTAMP] = e.ts
            if pageview:
                s[ENTRY] = s[ENTRY] or e.path
                s[EXIT], s[EXIT_HOST] = e.path, e.visit.hostname
                s[PAGEVIEWS] += 1
            s[IS_BOUNCE] = int(s[IS_BOUNCE] and not e.interactive)
            s[DURATION] = e.ts - s[START]
            s[EVENTS] += 1
        else:
            page = e.path if pageview else ""
            s = [self.random.getrandbits(64), 1, SITE, e.user_id, e.ts, e.ts, 1, page, page, e.visit.hostname]
            s += [int(pageview), 1, 0, keys, values, *_visit_values(e.visit)]
            self.cache[e.user_id] = s
        session_rows.append(orjson.dumps(s))
        event_rows.append(orjson.dumps([e.ts, e.name, SITE, e.user_id, s[0], e.path, keys, values, *s[-16:]]))

    def _insert(self, event_rows: list[bytes], session_rows: list[bytes]):
        begin = time.perf_counter()
        for table, columns, rows in (
            ("events_v2", EVENT_COLUMNS, event_rows),
            ("sessions_v2", SESSION_COLUMNS, session_rows),
        ):
            if rows:
                names = ", ".join(f"`{c}`" for c in (*columns, *VISIT_COLUMNS))
                body = b"\n".join(rows).decode()
                self.session.query(f"INSERT INTO {table} ({names}) FORMAT JSONCompactEachRow\n{body}")
                rows.clear()
        self.seconds["insert"] += time.perf_counter() - begin

    def merge(self) -> float:
        """OPTIMIZE ... FINAL on both tables (the sessions' rows collapse); its seconds."""
        begin = time.perf_counter()
        self.session.query("OPTIMIZE TABLE events_v2 FINAL")
        self.session.query("OPTIMIZE TABLE sessions_v2 FINAL")
        return time.perf_counter() - begin

    def bytes_on_disk(self) -> int:
        return int(
            self._rows(
                "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = currentDatabase() "
                "AND table IN ('events_v2', 'sessions_v2')"
            )[0][0]
        )

    # --- reading: one statement each

    def aggregate(self, start: date, end: date, filters=(), exact: bool = False) -> dict:
        uniq = "uniqExact" if exact else "uniq"
        page = next((value for dimension, value in filters if dimension == "page"), None)
        entered = f"s.entry_page = {_q(page)}" if page is not None else "1"  # (bounce rate under a page filter)
        (visitors, visits, pageviews, bounces, bounce_visits, duration, session_visits), *_ = self._rows(
            f"""
            SELECT ev.visitors, ev.visits, ev.pageviews, se.bounces, se.bounce_visits, se.duration, se.visits
            FROM (SELECT {uniq}(e.user_id) AS visitors, {uniq}(e.session_id) AS visits,
                         countIf(e.name = 'pageview') AS pageviews
                  {self._events_from(start, end, filters)}) AS ev
            CROSS JOIN
                 (SELECT sumIf(s.is_bounce * s.sign, {entered}) AS bounces, sumIf(s.sign, {entered}) AS bounce_visits,
                         sum(s.duration * s.sign) AS duration, sum(s.sign) AS visits
                  {self._sessions_from(start, end, filters)}) AS se
            """
        )
        bounce_rate, visit_duration = rates(int(bounces), int(bounce_visits), int(duration), int(session_visits))
        return {
            "visitors": int(visitors),
            "visits": int(visits),
            "pageviews": int(pageviews),
            "bounce_rate": bounce_rate,
            "visit_duration": visit_duration,
        }

    def timeseries(self, start: date, end: date, filters=(), exact: bool = False) -> list[tuple[date, int]]:
        uniq = "uniqExact" if exact else "uniq"
        found = {
            date.fromisoformat(day): int(n)
            for day, n in self._rows(
                f"SELECT toDate(e.timestamp) AS day, {uniq}(e.user_id) {self._events_from(start, end, filters)} "
                "GROUP BY day ORDER BY day"
            )
        }
        return [(day, found.get(day, 0)) for day in days(start, end)]

    def breakdown(
        self, dimension: str, start: date, end: date, filters=(), limit: int = 10, exact: bool = False
    ) -> list[tuple[str, int]]:
        uniq = "uniqExact" if exact else "uniq"
        if dimension in VISIT_DIMENSIONS:
            value, who, source = _visit_expression(dimension), "s.user_id", self._sessions_from(start, end, filters)
        else:
            value, only = self._event_dimension(dimension)
            who, source = "e.user_id", self._events_from(start, end, filters, only)
        rows = self._rows(
            f"SELECT {value} AS value, {uniq}({who}) AS visitors {source} "
            f"GROUP BY value ORDER BY visitors DESC, value ASC LIMIT {int(limit)}"
        )
        return [(v, int(n)) for v, n in rows]

    def retention(self, start: date, end: date, exact: bool = False) -> list[tuple[date, int, list[int]]]:
        uniq = "uniqExact" if exact else "uniq"
        found = {
            (date.fromisoformat(cohort), int(n)): int(count)
            for cohort, n, count in self._rows(
                f"""
                SELECT f.cohort, dateDiff('day', f.cohort, toDate(e.timestamp)) AS n, {uniq}(e.user_id)
                FROM events_v2 AS e
                INNER JOIN (SELECT user_id, toDate(min(timestamp)) AS cohort FROM events_v2 WHERE site_id = {SITE}
                            GROUP BY user_id
                            HAVING cohort >= toDate({_q(start.isoformat())}) AND cohort <= toDate({_q(end.isoformat())})
                           ) AS f ON e.user_id = f.user_id
                WHERE {self._range("e", start, end)}
                GROUP BY f.cohort, n
                """
            )
        }
        rows = []
        for cohort in days(start, end):
            retained = [found.get((cohort, n), 0) for n in range((end - cohort).days + 1)]
            rows.append((cohort, retained[0], retained))
        return rows

    def funnel(self, steps, start: date, end: date, exact: bool = False) -> list[int]:
        """(Counts of visitors are exact either way: count() of the visitors' rows.)"""
        window = day_start(end + timedelta(days=1)) - day_start(start)
        conditions = ", ".join(
            f"e.name = 'pageview' AND e.pathname = {_q(value)}" if kind == "page" else f"e.name = {_q(value)}"
            for kind, value in steps
        )
        levels = dict(
            self._rows(
                f"""
                SELECT level, count() FROM
                    (SELECT windowFunnel({window}, 'strict_increase')(e.timestamp, {conditions}) AS level
                     FROM events_v2 AS e WHERE {self._range("e", start, end)} GROUP BY e.user_id)
                WHERE level > 0 GROUP BY level
                """
            )
        )
        return [sum(int(n) for level, n in levels.items() if int(level) > k) for k in range(len(steps))]

    # --- the parts of a statement

    def _range(self, alias: str, start: date, end: date) -> str:
        first, last = day_start(start), day_start(end + timedelta(days=1))
        return f"{alias}.site_id = {SITE} AND {alias}.timestamp >= toDateTime({first}) AND {alias}.timestamp < toDateTime({last})"

    def _events_from(self, start: date, end: date, filters, only: str = "") -> str:
        """FROM and WHERE of an events query: WhereBuilder.build(:events) (range, event
        filters) and, under a visit filter, the join of the matching sessions
        (QueryBuilder.join_sessions_if_needed: sign = 1, grouped by session_id)."""
        visit, event = split(filters)
        where = [self._range("e", start, end), *(_event_condition(d, v) for d, v in event)] + ([only] if only else [])
        join = ""
        if visit:
            sessions = " AND ".join([self._sessions_range(start, end), *(_visit_condition(d, v) for d, v in visit)])
            join = (
                f"INNER JOIN (SELECT session_id FROM sessions_v2 WHERE {sessions} AND sign = 1 GROUP BY session_id)"
                " AS sq ON e.session_id = sq.session_id"
            )
        return f"FROM events_v2 AS e {join} WHERE {' AND '.join(where)}"

    def _sessions_from(self, start: date, end: date, filters) -> str:
        """FROM and WHERE of a sessions query: WhereBuilder.build(:sessions) (sessions active
        in the range, visit filters) and, under an event filter, the join of the sessions
        with a matching event (QueryBuilder.join_events_if_needed)."""
        visit, event = split(filters)
        where = [self._sessions_range(start, end, "s."), *(_visit_condition(d, v, "s.") for d, v in visit)]
        join = ""
        if event:
            events = " AND ".join([self._range("e", start, end), *(_event_condition(d, v) for d, v in event)])
            join = (
                f"INNER JOIN (SELECT DISTINCT e.session_id AS session_id FROM events_v2 AS e WHERE {events})"
                " AS ej ON s.session_id = ej.session_id"
            )
        return f"FROM sessions_v2 AS s {join} WHERE {' AND '.join(where)}"

    def _sessions_range(self, start: date, end: date, alias: str = "") -> str:
        first, last = day_start(start), day_start(end + timedelta(days=1))
        return (
            f"{alias}site_id = {SITE} AND {alias}timestamp >= toDateTime({first}) AND {alias}start < toDateTime({last})"
        )

    def _event_dimension(self, dimension: str) -> tuple[str, str]:
        """(value, condition) of an event dimension's breakdown."""
        if dimension == "page":
            return "e.pathname", "e.name = 'pageview'"
        if dimension == "goal":
            return "e.name", "e.name != 'pageview'"
        if dimension.startswith("prop:"):
            name = _q(dimension[5:])
            return f"e.`meta.value`[indexOf(e.`meta.key`, {name})]", f"has(e.`meta.key`, {name})"
        raise ValueError(f"no breakdown by {dimension!r}")

    def _rows(self, sql: str) -> list[list]:
        return orjson.loads(self.session.query(sql, "JSONCompact").bytes())["data"]


def main(n_events: int, repeat: int = 5):
    """Load n_events of the stream (60 days to yesterday) and print the peers table's
    ClickHouse column: load events/s, merge seconds, bytes per event on disk, then each
    question's first run and warm median in ms (uniq, and uniqExact)."""
    with ClickHousePeer() as peer:
        seconds = peer.load(stream.batches(n_events))
        merged = peer.merge()
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in peer.seconds.items())
        print(f"load: {peer.events:,} events in {seconds:.1f} s = {peer.events / seconds:,.0f} events/s ({parts})")
        print(f"dropped by the bot checks: {peer.dropped}; merge (OPTIMIZE FINAL): {merged:.2f} s")
        print(f"on disk: {peer.bytes_on_disk():,} B = {peer.bytes_on_disk() / peer.events:.1f} B per event")
        end = datetime.now(UTC).date() - timedelta(days=1)
        print(f"{'question (30 days)':<44} {'first ms':>9} {'median':>8} {'exact 1st':>9} {'median':>8}")
        for q in questions(end):
            cells = []
            for exact in (False, True):
                times = []
                for _ in range(repeat + 1):
                    begin = time.perf_counter()
                    getattr(peer, q.method)(*q.args, **q.kwargs, exact=exact)
                    times.append((time.perf_counter() - begin) * 1000)
                cells += [f"{times[0]:9.1f}", f"{statistics.median(times[1:]):8.1f}"]
            print(f"{q.label:<44} {' '.join(cells)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
