"""Earlier versions' first days seen into the present layout (scripts/firstdays_migrate.lua).

Versions before the runs of lib/firstdays.lua kept a u16 day per visitor id in one
string, 2 bytes a visitor for ever. Ingest still reads it for the ids it holds; this turns
it into runs and moved ids, a chunk of ids per call, while Tally runs, and then drops it.
"""

import redis

from . import keys

CHUNK = 50_000  # ids per call: the call reads 100 KB of the string, a few ms of Lua


def migrate(r: redis.Redis, site_id: int, chunk: int = CHUNK, progress=None) -> int:
    """Move the site's earlier first days (if any) into runs; returns how many ids they
    held (0: nothing to move)."""
    from .cluster import site_client
    from .scripts import FIRSTDAYS_MIGRATE

    node = site_client(r, site_id)
    base, runs = keys.first_days(site_id), keys.first_days_runs(site_id)
    if not node.exists(base):
        return 0
    first_run = node.zrange(runs, 0, 0, withscores=True)
    end = int(first_run[0][1]) if first_run else int(node.get(keys.visitor_id_counter(site_id)) or 0)
    at, open_day = 0, -1
    while at >= 0:
        done_to, open_day = FIRSTDAYS_MIGRATE.run(
            node, [base, keys.first_days_runs_aside(site_id), runs], [at, chunk, end, open_day]
        )
        if progress:
            progress((end if done_to < 0 else done_to) - at)
        at = done_to
    return end
