"""A real local Redis Cluster for tests: three masters from the same server binary as
everything else (TALLY_REDIS_SERVER), joined by hand as redis-cli would join them:
slots assigned with CLUSTER ADDSLOTS, nodes introduced with CLUSTER MEET. No replicas
(the tests are about routing and slots, not failover)."""

import socket
import time

import redis

from tests.redis_server import RedisServer, free_port

SLOTS = 16384


def _port_with_bus() -> int:
    """A free port whose cluster bus port (port + 10000) is free too (Redis 6.2 has no
    --cluster-port: the bus is always port + 10000)."""
    while True:
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


class RedisClusterServers:
    """`url` is a seed node's address (any node will do for a cluster client)."""

    def __init__(self, masters: int = 3):
        self.nodes: list[RedisServer] = []
        try:
            for _ in range(masters):
                self.nodes.append(
                    RedisServer(
                        "--cluster-enabled",
                        "yes",
                        "--cluster-node-timeout",
                        "5000",
                        "--cluster-config-file",
                        "nodes.conf",
                        port=_port_with_bus(),
                    )
                )
            self._join()
        except BaseException:
            self.stop()
            raise
        self.url = self.nodes[0].url
        self.version = self.nodes[0].version

    def _join(self):
        clients = [redis.Redis(port=node.port) for node in self.nodes]
        share = SLOTS // len(clients)
        for i, client in enumerate(clients):
            last = SLOTS - 1 if i == len(clients) - 1 else (i + 1) * share - 1
            client.execute_command("CLUSTER", "ADDSLOTS", *range(i * share, last + 1))
        for node in self.nodes[1:]:
            clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
        deadline = time.monotonic() + 30
        while True:
            infos = [client.execute_command("CLUSTER", "INFO") for client in clients]
            if all(self._ok(info) for info in infos):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not form: {infos}")
            time.sleep(0.05)
        for client in clients:
            client.close()

    def _ok(self, info) -> bool:
        text = info.decode() if isinstance(info, bytes) else str(info)
        fields = dict(line.split(":", 1) for line in text.split() if ":" in line)
        return fields.get("cluster_state") == "ok" and fields.get("cluster_known_nodes") == str(len(self.nodes))

    def stop(self):
        for node in self.nodes:
            node.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":  # by hand: python -m tests.redis_cluster (Ctrl-C or kill stops it, and its nodes)
    from tests.redis_server import serve_by_hand

    serve_by_hand(RedisClusterServers(), "3 masters")
