"""Doist's bitmapist marking events on the bench Redis (runs in its own virtualenv: bitmapist
3.119 pins redis-py below 6). Prints one JSON line: events/s per call and pipelined."""

import json
import sys
import time
from datetime import UTC, datetime

import bitmapist
import redis

url, events, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
client = redis.Redis.from_url(url)
bitmapist.SYSTEMS["bench"] = client
now = datetime.now(UTC)
ids = [(n * 7919) % 50_000 for n in range(events)]

start = time.perf_counter()
for uid in ids[: events // 4]:
    bitmapist.mark_event("active", uid, system="bench", now=now)
per_call = (events // 4) / (time.perf_counter() - start)

start = time.perf_counter()
for offset in range(0, events, batch):
    pipe = client.pipeline(transaction=False)
    for uid in ids[offset : offset + batch]:
        bitmapist.mark_event("active", uid, system=pipe, now=now, use_pipeline=False)
    pipe.execute()
pipelined = events / (time.perf_counter() - start)
print(json.dumps({"per_call": per_call, "pipelined": pipelined}))
