"""Background exports: a job per large report, built by a Celery worker when the export
semaphore lets it (at most EXPORT_CONCURRENCY at once across all workers, first come
first served), with its progress in Redis and the file kept for 24 hours."""

import secrets
import threading
from datetime import date
from typing import cast

import redis
from django.conf import settings

from ..queries import segments
from ..sites import SiteInfo
from ..store import keys
from ..store.semaphore import Semaphore
from . import tables

FILE_TTL = 24 * 3600
SEMAPHORE_TIMEOUT = 60.0  # a holder silent this long (a crashed worker) loses its slot


def semaphore(r: redis.Redis) -> Semaphore:
    return Semaphore(r, settings.EXPORT_CONCURRENCY, SEMAPHORE_TIMEOUT)


def create(r: redis.Redis, site: SiteInfo, fmt: str, start: date, end: date, filters: str = "") -> str:
    job = secrets.token_urlsafe(16)
    r.hset(
        keys.export_job(job),
        mapping={
            "site": site.id,
            "format": fmt,
            "from": start.isoformat(),
            "to": end.isoformat(),
            "state": "queued",
            "progress": 0,
            "position": 0,
            "filename": tables.filename(site, start, end, fmt),
            "filters": filters,
        },
    )
    r.expire(keys.export_job(job), FILE_TTL)
    return job


def status(r: redis.Redis, job: str) -> dict | None:
    raw = cast(dict[bytes, bytes], r.hgetall(keys.export_job(job)))
    if not raw:
        return None
    data = {k.decode(): v.decode() for k, v in raw.items()}
    return {
        "job": job,
        "site": int(data["site"]),
        "state": data["state"],
        "progress": float(data["progress"]),
        "position": int(data.get("position", 0)),
        "format": data["format"],
        "from": data["from"],
        "to": data["to"],
        "filename": data["filename"],
        "error": data.get("error"),
        "filters": data.get("filters", ""),
    }


def try_build(r: redis.Redis, job: str, site: SiteInfo) -> bool:
    """Build the job's file if the semaphore gives us a slot; False (and the queue
    position noted in the job) when it does not: the caller retries soon."""
    sem = semaphore(r)
    position = sem.acquire(job)
    if position:
        r.hset(keys.export_job(job), mapping={"state": "queued", "position": position})
        return False
    stop = threading.Event()

    def keep_slot():  # refresh well within the timeout while the report builds
        while not stop.wait(SEMAPHORE_TIMEOUT / 4):
            sem.acquire(job)

    watchdog = threading.Thread(target=keep_slot, daemon=True)
    watchdog.start()
    try:
        info = cast(dict, status(r, job))  # (create() made the hash; an expired one fails the job below, as before)
        r.hset(keys.export_job(job), mapping={"state": "running", "position": 0})
        start, end = date.fromisoformat(info["from"]), date.fromisoformat(info["to"])
        report = tables.build(
            r,
            site,
            start,
            end,
            progress=lambda share: r.hset(keys.export_job(job), "progress", share),
            filters=segments.parse(info["filters"]),
        )
        body = tables.write(report, info["format"])
        r.set(keys.export_file(job), body, ex=FILE_TTL)
        r.hset(keys.export_job(job), mapping={"state": "done", "progress": 1})
    except Exception as e:
        r.hset(keys.export_job(job), mapping={"state": "failed", "error": str(e)[:500]})
        raise
    finally:
        stop.set()
        watchdog.join()
        sem.release(job)
    return True


def file_body(r: redis.Redis, job: str) -> bytes | None:
    """A finished export's file, or None once it has expired."""
    return cast(bytes | None, r.get(keys.export_file(job)))
