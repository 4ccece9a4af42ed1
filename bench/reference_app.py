"""The HTTP reference for `make bench`: a bare WSGI app (no Django, no validation, no ids)
that writes each event with a plain redis-py pipeline. It shows what the machine gives
before any of Tally's work: the ceiling our endpoints are measured against.

Same writes per event as bench's pipeline reference: PFADD site, PFADD page, INCRBY
pageviews, INCRBY page pageviews, SETBIT active (the visitor number as the offset).
"""

import os
import zlib

import orjson
import redis

r = redis.Redis.from_url(os.environ["REDIS_URL"])


def write_events(pipe, events):
    for e in events:
        visitor = e.get("visitor") or e.get("ip") or "anon"
        page = e["url"]
        pipe.pfadd("ref:{1}:uv", visitor)
        pipe.pfadd("ref:{1}:uv:" + page, visitor)
        pipe.incrby("ref:{1}:pv", 1)
        pipe.incrby("ref:{1}:pv:" + page, 1)
        pipe.setbit("ref:{1}:active", zlib.crc32(visitor.encode()) & 0xFFFFF, 1)


def application(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if environ["REQUEST_METHOD"] != "POST" or not length:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]
    body = environ["wsgi.input"].read(length)
    data = orjson.loads(body)
    if isinstance(data, dict):  # a single Plausible-style event
        data = [{"url": data.get("url", "/"), "ip": environ.get("HTTP_X_FORWARDED_FOR", "")}]
    pipe = r.pipeline(transaction=False)
    write_events(pipe, data)
    pipe.execute()
    start_response("202 Accepted", [("Content-Type", "text/plain")])
    return [b"ok"]
