"""Redis Cluster: one client the rest of Tally uses as it uses a single server.

Every key of a site carries the site's hash tag (`tally:{<site id>}:...`, store/keys.py),
so all of a site's keys live in one slot, on one master: the ingest script, the rollups'
BITOP and PFMERGE, multi-key PFCOUNT are all single-slot and legal on a cluster. What
redis-py's own cluster client refuses is only its *pipeline*: BITOP, PFCOUNT, PFMERGE,
EVALSHA and SCRIPT cannot be queued there, even when every key shares a slot. So
`ClusterClient` is redis-py's RedisCluster (single commands: routed by slot, MOVED and
ASK followed, SCRIPT LOAD sent to every master) whose `pipeline()` is a `SlotPipeline`:
it queues like a pipeline, then sends each node the commands of its slots through a plain
pipeline on that node's connection, and puts the answers back in order. Code written for
one server runs unchanged; a pipeline that spans several sites costs one round trip per
master it touches.

`site_client()` gives the plain client of the master that holds a site's slot, for what
must see one node whole (SCAN of a site's keys).
"""

from typing import cast

import redis
from redis.cluster import RedisCluster


class ClusterClient(RedisCluster):
    def pipeline(self, transaction=None, shard_hint=None):
        if transaction:
            raise ValueError("no MULTI across a cluster: Tally's pipelines are not transactions")
        return SlotPipeline(self)


class SlotPipeline(redis.Redis):
    """A pipeline over a cluster (see the module). It inherits the command methods of
    redis.Redis, each of which ends in execute_command(); queued, as a pipeline does."""

    cluster: RedisCluster  # type: ignore[assignment]  # (shadows redis.Redis.cluster(), the CLUSTER command)

    def __init__(self, cluster: RedisCluster):  # (no Redis.__init__: this holds no connection of its own)
        self.cluster = cluster
        self.command_stack: list[tuple[tuple, dict]] = []  # (args, options), as redis-py's Pipeline keeps them

    def execute_command(self, *args, **options):
        self.command_stack.append((args, options))
        return self

    def __len__(self):
        return len(self.command_stack)

    def __bool__(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.reset()

    def reset(self):
        self.command_stack = []

    def execute(self, raise_on_error: bool = True) -> list:
        stack, self.command_stack = self.command_stack, []
        by_node: dict[str, tuple] = {}
        for i, (args, _) in enumerate(stack):
            slot = cast(int, self.cluster.determine_slot(*args))  # (None only for CLIENT TRACKING: never queued here)
            node = self.cluster.nodes_manager.get_node_from_slot(slot)
            by_node.setdefault(node.name, (node, []))[1].append(i)
        results: list = [None] * len(stack)
        for node, indexes in by_node.values():
            pipe = self.cluster.get_redis_connection(node).pipeline(transaction=False)
            for i in indexes:
                args, options = stack[i]
                pipe.execute_command(*args, **options)
            for i, answer in zip(indexes, pipe.execute(raise_on_error=False)):
                results[i] = answer
        if raise_on_error:
            for answer in results:
                if isinstance(answer, Exception):
                    raise answer
        return results


def site_client(r: redis.Redis, site_id: int) -> redis.Redis:
    """The client that sees all of a site's keys: `r` itself on a single server, on a
    cluster the plain client of the master holding the site's slot."""
    if not isinstance(r, RedisCluster):
        return r
    from .keys import site_prefix

    node = r.nodes_manager.get_node_from_slot(r.keyslot(site_prefix(site_id)))
    return r.get_redis_connection(node)
