"""The ingest spool: an accepted event is not lost when Redis is down, and not counted twice.

When a write to Redis fails (refused, or timed out: then Redis may have applied it), the
ingest endpoints append the validated events to a local append-only file
(`var/spool/<host>-<pid>-s<site>.ndjson`, fsynced) and still answer as accepted, up to
SPOOL_MAX_BYTES_PER_SITE a site (then 503: refused, never accepted and dropped), the rate
limits charged in memory meanwhile (store/limits.py throttle_locally). Every line keeps
its call's mark (record.Mark): replaying a call Redis had already applied counts nothing,
so delivery is exactly once.

A beat job replays the files once Redis answers again. A replayer claims a file by
renaming it to a unique `*.replaying` name and holds an exclusive lock on it (flock)
while it works; a claimed file whose lock is free (its replayer died, or gave up when
Redis failed again) is taken again by the next replay. Writers lock too, and check after
locking that their file was not claimed meanwhile, so no line is written into a file
that is being replayed.
"""

import base64
import fcntl
import logging
import os
import secrets
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import redis
from django.conf import settings

from ..ingest.record import Hit, Mark, Recorded, record
from ..models import Site
from ..sites import SiteInfo
from ..store.connection import OUTAGE
from ..store.limits import outage_seen, throttle_locally
from . import inbox

log = logging.getLogger(__name__)


def directory() -> Path:
    return Path(settings.VAR_DIR) / "spool"


class StorageUnavailable(Exception):
    """Redis could not take the events and neither could the spool (the disk)."""


class SpoolFull(StorageUnavailable):
    """Redis is out and the site's spool has reached its cap (SPOOL_MAX_BYTES_PER_SITE):
    the events are refused (503), not accepted and then dropped."""


def record_or_spool(
    r: redis.Redis, site: SiteInfo, hits: list[Hit], now: datetime, mark: Mark, limits=()
) -> Recorded | None:
    """Count the hits; if Redis is out (refused, timed out; a cluster's slot down or
    moved), keep them in the spool instead: None. The mark makes sure a call Redis applied
    before its answer was lost is not counted again on replay. Raises Limited over a rate
    limit (nothing counted), StorageUnavailable when the spool cannot be written either."""
    if outage_seen():  # (Redis cannot check the limits now: this process does, before the write)
        throttle_locally(list(limits))
    try:
        recorded = record(r, site, hits, now=now, mark=mark, limits=limits)
    except OUTAGE:
        outage_seen(True)
        keep(site, hits, now, mark)
        return None
    outage_seen(False)
    return recorded


def keep(site: SiteInfo, hits: list[Hit], received: datetime, mark: Mark):
    """write(), or StorageUnavailable (logged: those events are lost); a site whose spool
    is full gets SpoolFull (refused, 503)."""
    try:
        write(site, hits, received=received, mark=mark)
    except SpoolFull:
        log.warning(
            "spool of site %s full (%d bytes): %d events refused", site.id, settings.SPOOL_MAX_BYTES_PER_SITE, len(hits)
        )
        raise
    except OSError as e:
        log.error("Redis and the spool both failed; %d events not kept: %s", len(hits), e)
        raise StorageUnavailable(str(e)) from None


def write(site: SiteInfo, hits: list[Hit], received: datetime | None = None, mark: Mark | None = None) -> int:
    """Append the hits to this process's spool file; events without a timestamp get the
    time they arrived, so a replay counts them on the right day and minute."""
    received = received or datetime.now(UTC)
    folder = directory()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    call = list(mark) if mark else None
    lines = b"".join(
        orjson.dumps(
            {
                "site": site.id,
                "ts": (hit.ts or received).isoformat(),
                "path": hit.path,
                "name": hit.name,
                "identity": base64.b64encode(hit.identity).decode(),
                "bot": hit.bot,
                "user": hit.user,
                "attrs": hit.attrs,
                "interactive": hit.interactive,
                "props": hit.props,
                "revenue": hit.revenue,
                "call": call,
            }
        )
        + b"\n"
        for hit in hits
    )
    if _site_spooled(folder, site.id) + len(lines) > settings.SPOOL_MAX_BYTES_PER_SITE:
        raise SpoolFull(f"the spool of site {site.id} is full")
    path = (
        folder / f"{socket.gethostname()}-{os.getpid()}-s{site.id}.ndjson"
    )  # (a file per site: its cap is read by name)
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _still_named(fd, path):
                os.write(fd, lines)
                os.fsync(fd)
                return len(hits)
        finally:
            os.close(fd)  # (closing releases the lock)
        # a replayer claimed the file between our open and our lock: write a new one


def _site_spooled(folder: Path, site_id: int) -> int:
    """Bytes the site's events take in the spool now (every process's files, claimed ones too)."""
    total = 0
    for path in folder.glob(f"*-s{site_id}.*"):
        try:
            total += path.stat().st_size
        except FileNotFoundError:
            pass
    return total


def _still_named(fd: int, path: Path) -> bool:
    """Is the open file still the one at `path` (not renamed away, not deleted)?"""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _hit(entry: dict) -> Hit:
    return Hit(
        datetime.fromisoformat(entry["ts"]),
        entry["path"],
        entry["name"],
        base64.b64decode(entry["identity"]),
        entry["bot"],
        entry.get("user"),
        entry.get("attrs", ""),
        entry.get("interactive", True),
        tuple(tuple(p) for p in entry.get("props") or ()),
        tuple(entry["revenue"]) if entry.get("revenue") else None,
    )


def _calls(entries: list[dict]):
    """Consecutive lines of one call (same site and mark), in order: (site id, mark, hits).
    A call's lines are written together, so they are consecutive."""
    current: Any = None  # (site id, mark) of the call read so far
    hits: list[Hit] = []
    for entry in entries:
        call = (entry["site"], tuple(entry["call"]) if entry.get("call") else None)
        if call != current and hits:
            yield (*current, hits)
            hits = []
        current = call
        hits.append(_hit(entry))
    if hits:
        yield (*current, hits)


def _claim(path: Path) -> tuple[int, Path] | None:
    """Take a spool file for replay: an open, exclusively locked descriptor and its
    claimed name, or None when someone else has it (or it is gone)."""
    if path.suffix == ".ndjson":
        claimed = path.with_name(f"{path.stem}.{secrets.token_hex(4)}.replaying")
        try:
            path.rename(claimed)
        except FileNotFoundError:  # another replayer took it
            return None
        blocking = True  # a writer may hold it for a moment
    else:
        claimed, blocking = path, False
    try:
        fd = os.open(claimed, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # a live replayer is on it
        os.close(fd)
        return None
    if os.fstat(fd).st_nlink == 0:  # replayed and deleted while we waited
        os.close(fd)
        return None
    return fd, claimed


def replay(r: redis.Redis) -> int:
    """Count every spooled event into Redis; returns how many events were replayed. A file
    is deleted once all its calls are in. If Redis fails again (refused, or timed out), the
    file stays claimed but unlocked, and the next replay takes it again: the calls already
    applied are skipped by their marks."""
    folder = directory()
    if not folder.is_dir():
        return 0
    done = 0
    for path in sorted(folder.glob("*.ndjson")) + sorted(folder.glob("*.replaying")):
        claim = _claim(path)
        if claim is None:
            continue
        fd, claimed = claim
        try:
            with os.fdopen(os.dup(fd), "rb") as file:
                entries = [orjson.loads(line) for line in file.read().splitlines() if line.strip()]
            wanted = {e["site"] for e in entries}
            sites = {site.pk: SiteInfo.from_model(site) for site in Site.objects.filter(pk__in=wanted)}
            count = 0
            for site_id, mark, hits in _calls(entries):
                if site_id in sites:  # a deleted site's events are dropped
                    mark = Mark(*mark) if mark else None
                    if inbox.is_push_mark(mark):  # (a group for the inbox: pushed there, once)
                        inbox.push(r, sites[site_id], hits, mark=mark)
                        inbox.drain(r, sites[site_id])
                    else:
                        record(r, sites[site_id], hits, mark=mark)
                count += len(hits)
        except OUTAGE as e:
            log.warning("Redis failed during a spool replay (%s); %s waits for the next one", e, claimed.name)
            os.close(fd)
            break
        claimed.unlink()
        os.close(fd)
        done += count
    return done
