"""Bloom filters: the observed false-positive rate against the configured one (before and
after scaling), memory per item against the formula, and speed, beside a plain Python set
holding the same items (exact, but keeping every item)."""

import math
import sys
import time

from recommendations import bloom
from recommendations.bloom import BloomConfig

PROBES = 100_000
CAPACITY = 10_000


def run(r, say) -> list[tuple]:
    rows = []
    for error in (0.01, 0.001):
        config = BloomConfig(capacity=CAPACITY, error_rate=error, expansion=2)
        user = f"bench-{error}"
        key = f"tally:{{0}}:bloom:{user}"
        say(f"bloom bench: p={error}")
        items = [f"/articles/{n}" for n in range(7 * CAPACITY)]
        probes = [f"/never/{n}" for n in range(PROBES)]

        start = time.perf_counter()
        for i in range(0, CAPACITY, 1000):
            bloom.add(r, 0, user, items[i : i + 1000], config, native=False)
        add_rate = CAPACITY / (time.perf_counter() - start)
        start = time.perf_counter()
        fp_full = (
            sum(sum(bloom.seen(r, 0, user, probes[i : i + 1000], config, native=False)) for i in range(0, PROBES, 1000))
            / PROBES
        )
        check_rate = PROBES / (time.perf_counter() - start)
        bits_formula = -CAPACITY * math.log(error / 2) / math.log(2) ** 2
        memory = r.memory_usage(key)

        for i in range(CAPACITY, len(items), 1000):  # 10k + 20k + 40k: three sub-filters, all full
            bloom.add(r, 0, user, items[i : i + 1000], config, native=False)
        fp_scaled = (
            sum(sum(bloom.seen(r, 0, user, probes[i : i + 1000], config, native=False)) for i in range(0, PROBES, 1000))
            / PROBES
        )
        filters = int(r.hget(key + ":shape", "filters"))
        scaled_bits = sum(bloom.shape(config, j)[1] for j in range(filters))
        scaled_memory = r.memory_usage(key)
        assert all(bloom.seen(r, 0, user, items, config, native=False))  # no false negatives

        reference = set()
        start = time.perf_counter()
        for item in items[:CAPACITY]:
            reference.add(item)
        set_rate = CAPACITY / (time.perf_counter() - start)
        set_bytes = sys.getsizeof(reference) + sum(sys.getsizeof(item) for item in reference)

        rows += [
            (
                f"p={error}, {CAPACITY:,} items (1 sub-filter, full)",
                f"{fp_full:.4%}",
                f"{fp_full / error:.2f}",
                f"{memory * 8 / CAPACITY:.2f}",
                f"{bits_formula / CAPACITY:.2f}",
                f"{add_rate:,.0f} / {check_rate:,.0f}",
            ),
            (
                f"p={error}, {len(items):,} items ({filters} sub-filters, full)",
                f"{fp_scaled:.4%}",
                f"{fp_scaled / error:.2f}",
                f"{scaled_memory * 8 / len(items):.2f}",
                f"{scaled_bits / len(items):.2f}",
                "",
            ),
            (
                f"ref: Python set of the first {CAPACITY:,} items (exact)",
                "0%",
                "",
                f"{set_bytes * 8 / CAPACITY:.0f}",
                "",
                f"{set_rate:,.0f}",
            ),
        ]
        r.unlink(key, key + ":shape")
    return rows
