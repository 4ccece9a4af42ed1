"""The capture edge: what happens to an event between its acknowledgement and its count.

A single event from the event front (analytics/api/event_front.py) is pushed into its
site's inbox with others in one group commit (group_commit.py), acknowledged, and
counted in batches by a drainer (inbox.py); a batch that cannot reach Redis is written
to the spool and replayed, counted once (spool.py). Counting itself is ingest's
(analytics/ingest/record.py); the edge only decides when, and makes sure it is once."""
