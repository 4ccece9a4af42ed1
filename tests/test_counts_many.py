"""counts/many.py: many counts of a site's keys in few script calls (count_keys.lua) give
what the commands give one by one, across call boundaries and for missing keys."""

import pytest

from analytics.counts import many
from analytics.store import keys


@pytest.mark.parametrize("call_keys", [many.CALL_KEYS, 3])  # (3: the queue cut into many calls)
def test_counts_are_the_commands_answers_in_order(r, monkeypatch, call_keys):
    monkeypatch.setattr(many, "CALL_KEYS", call_keys)
    name = lambda n: keys.temporary(1, "many", str(n))  # noqa: E731  # (one site's slot: a cluster takes them)
    for n in range(6):
        r.pfadd(name(f"h{n}"), *(f"v{i}" for i in range(n * 10, n * 10 + 25)))
        r.setbit(name(f"b{n}"), 7 * n + 3, 1)
        r.setbit(name(f"b{n}"), 1000, 1)
        r.set(name(f"g{n}"), 11 * n)
    counts = many.Counts()
    for n in range(6):
        counts.pfcount(name(f"h{n}"))
        counts.bitcount(name(f"b{n}"))
        counts.get(name(f"g{n}"))
    counts.pfcount(*(name(f"h{n}") for n in range(6)))  # (a union of six)
    counts.pfcount(name("missing"))
    counts.bitcount(name("missing"))
    counts.get(name("missing"))
    counts.exists(name("h1"), name("missing"), name("b2"))
    want = []
    for n in range(6):
        want += [r.pfcount(name(f"h{n}")), r.bitcount(name(f"b{n}")), 11 * n]
    want += [r.pfcount(*(name(f"h{n}") for n in range(6))), 0, 0, 0, 2]
    assert counts.run(r) == want
    assert many.Counts().run(r) == []
