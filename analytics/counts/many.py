"""Many counts of one site's keys in few round trips (scripts/count_keys.lua): a rollup
counts every page's and visit value's HLL, bitmap and pageviews of every day, ~80,000
keys for 60 days of a mid-sized site, where a pipeline's client side alone costs ~11 us
a command."""

import redis

from ..store.scripts import COUNT_KEYS

CALL_KEYS = 500  # keys a script call takes: a dense HLL whose count is not cached takes ~50 us


class Counts:
    """Queue counts (each returns its index), then run() them: their numbers, in order."""

    def __init__(self):
        self.keys: list[str] = []
        self.ops: list[str] = []
        self._calls: list[tuple[list, list]] = []
        self._start = self._op_start = 0  # (the first key and op of the call being filled)

    def _add(self, op: str, keys: list[str]) -> int:
        if len(self.keys) - self._start + len(keys) > CALL_KEYS and len(self.keys) > self._start:
            self._cut()
        self.keys.extend(keys)
        self.ops.append(f"{op}{len(keys)}")
        return len(self.ops) - 1

    def _cut(self):
        self._calls.append((self.keys[self._start :], self.ops[self._op_start :]))
        self._start, self._op_start = len(self.keys), len(self.ops)

    def pfcount(self, *keys: str) -> int:
        return self._add("h", list(keys))

    def exists(self, *keys: str) -> int:
        return self._add("e", list(keys))

    def bitcount(self, key: str) -> int:
        return self._add("b", [key])

    def get(self, key: str) -> int:
        return self._add("g", [key])

    def run(self, r: redis.Redis) -> list[int]:
        if len(self.keys) > self._start:
            self._cut()
        calls, self._calls = self._calls, []
        return [int(n) for answer in COUNT_KEYS.run_many(r, calls) for n in answer] if calls else []
