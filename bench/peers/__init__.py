"""The peers section of `make bench` (issue 38): Tally beside the engine a Tally user would
otherwise run, on the same events, with the exact answer beside both.

* stream.py: one deterministic, realistic stream of web-analytics events in Tally's batch API
  format (visitors returning over days, sessions, sources, UTM campaigns, real browsers,
  30 countries, Signup goals), the input of every engine;
* enrich.py: the enrichment both the ClickHouse peer and the truth read, done with Tally's
  own ingest functions, so every engine counts the same fields;
* clickhouse.py: Plausible's engine as Plausible runs it: an embedded ClickHouse (chdb) with
  the `events_v2` / `sessions_v2` tables, sessions built the way its session cache builds
  them, and the dashboard's queries as its query builder writes them;
* truth.py: every one of those queries answered the slow, obvious way (sets of visitors in
  Python), with the same definitions, to measure every engine's error against.

chdb is a bench and test dependency only (bench/requirements-peers.txt): no ClickHouse in the
product, it is a reference.
"""
