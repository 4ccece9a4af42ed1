"""The ingest spool: an accepted event is not lost when Redis is down.

When a write to Redis fails, the ingest endpoints append the validated events to a local
append-only file (`var/spool/<host>-<pid>.ndjson`, fsynced) and still answer as accepted.
A beat job replays the files once Redis answers again: each file is claimed by renaming it
first, so two replayers never take the same one. Delivery is at least once: an event whose
write reached Redis just before the connection broke may be counted twice.
"""
import base64
import logging
import os
import socket
from datetime import UTC, datetime
from pathlib import Path

import orjson
import redis
from django.conf import settings

from ..models import Site
from ..sites import SiteInfo
from .record import Hit, record

log = logging.getLogger(__name__)
REPLAY_BATCH = 5000


def directory() -> Path:
    return Path(settings.VAR_DIR) / "spool"


def write(site: SiteInfo, hits: list[Hit], received: datetime | None = None) -> int:
    """Append the hits to this process's spool file; events without a timestamp get the
    time they arrived, so a replay counts them on the right day and minute."""
    received = received or datetime.now(UTC)
    folder = directory()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{socket.gethostname()}-{os.getpid()}.ndjson"
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
            }
        )
        + b"\n"
        for hit in hits
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, lines)
        os.fsync(fd)
    finally:
        os.close(fd)
    return len(hits)


def _hit(entry: dict) -> Hit:
    return Hit(
        datetime.fromisoformat(entry["ts"]),
        entry["path"],
        entry["name"],
        base64.b64decode(entry["identity"]),
        entry["bot"],
        entry.get("user"),
    )


def replay(r: redis.Redis) -> int:
    """Count every spooled event into Redis; returns how many. A file is deleted once all
    its events are in; if Redis fails again half way, the rest goes back to the spool."""
    folder = directory()
    if not folder.is_dir():
        return 0
    done = 0
    for path in sorted(folder.glob("*.ndjson")):
        claimed = path.with_suffix(".replaying")
        try:
            path.rename(claimed)
        except FileNotFoundError:  # another replayer took it
            continue
        entries = [orjson.loads(line) for line in claimed.read_bytes().splitlines() if line.strip()]
        sites = {site.pk: SiteInfo.from_model(site) for site in Site.objects.filter(pk__in={e["site"] for e in entries})}
        position = 0
        try:
            while position < len(entries):
                batch = entries[position : position + REPLAY_BATCH]
                by_site: dict[int, list[Hit]] = {}
                for entry in batch:
                    if entry["site"] in sites:  # a deleted site's events are dropped
                        by_site.setdefault(entry["site"], []).append(_hit(entry))
                for site_id, hits in by_site.items():
                    record(r, sites[site_id], hits)
                position += len(batch)
                done += len(batch)
        except redis.exceptions.ConnectionError:
            log.warning("Redis failed during a spool replay; %d events wait for the next one", len(entries) - position)
            rest = folder / f"{claimed.stem}-rest-{position}.ndjson"
            rest.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries[position:]))
            claimed.unlink()
            break
        claimed.unlink()
    return done
