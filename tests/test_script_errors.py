"""A script's error names the file and line it happened in, not only the line of the
pasted source Redis ran (lib files are pasted in front of each script): e.g.
"user_script:1372 (record_batch.lua:90): attempt to compare number with nil"."""

import inspect
from pathlib import Path

import pytest
import redis

import analytics.store.scripts as scripts
from analytics.store.scripts import RECORD_BATCH, THROTTLE


def test_an_error_in_a_script_names_its_file_and_line(r):
    with pytest.raises(redis.exceptions.ResponseError) as raised:
        RECORD_BATCH.run(r, [], ["not a number"])
    located = str(raised.value).split("user_script:", 1)[1].split(")", 1)[0]
    line, _, where = located.partition(" (")
    file, _, local = where.rpartition(":")
    own = (Path(scripts.__file__).parent / file).read_text().split("\n")  # (the prelude is one line: not here)
    assert RECORD_BATCH.source.split("\n")[int(line) - 1] == own[int(local) - 1]  # (the same line, in its own file)


def test_where_maps_each_files_first_and_last_lines():
    assert THROTTLE.where(1).endswith(":1") and THROTTLE.where(1).startswith("(generated prelude")
    opened = THROTTLE.source.split("\n").index("local gcra = (function()") + 1  # (the line that opens its module)
    assert THROTTLE.where(opened + 1) == "lib/gcra.lua:1"
    assert THROTTLE.where(THROTTLE.source.count("\n") + 1).startswith("throttle.lua:")


def test_the_scripts_read_the_protocol_python_defines(r):
    """The constants Python and Lua share are the prelude's: the scripts see Python's values."""
    from analytics.store import protocol

    got = r.eval(
        protocol.lua_prelude() + "\nreturn {PROTOCOL.FIELD_VALUE_SEP, PROTOCOL.FIELD_SEP, PROTOCOL.GROUP_SEP, "
        "PROTOCOL.OTHER, PROTOCOL.COUNTS, PROTOCOL.EVENT, PROTOCOL.FIRST_DAYS_MOVED, "
        "struct.pack(PROTOCOL.COUNTS, 1, -2, 3, 4, 5), struct.size(PROTOCOL.EVENT)}",
        0,
    )
    *names, packed, size = got
    assert [v.decode() if isinstance(v, bytes) else v for v in names] == [
        protocol.FIELD_VALUE_SEP,
        protocol.FIELD_SEP,
        protocol.GROUP_SEP,
        protocol.OTHER,
        protocol.COUNTS_LUA,
        protocol.EVENT_FORMAT,
        protocol.FIRST_DAYS_MOVED,
    ]
    assert protocol.COUNTS.unpack(packed) == (1, -2, 3, 4, 5)
    import struct

    assert size == struct.calcsize(protocol.EVENT_FORMAT)


def test_the_keys_the_scripts_name_are_keys_pys(r):
    """Every KEY function of the prelude builds the name store/keys.py builds, on a real server."""
    from datetime import date

    from analytics.store import keys
    from analytics.store.scripts import PRELUDE
    from analytics.store.scripts.keynames import FAMILIES

    day = date(2026, 11, 26)
    values = {"n": 7, "bucket": 3, "day": day, "field": "source\x1fGoogle", "path": "/a b/é", "name": "Signup"}
    values["group"] = "Signup\x1fplan\x1fpro"
    for family, builders in FAMILIES.items():
        for builder in builders:
            names = [p for p in inspect.signature(builder).parameters if p != "site_id"]
            args = [values[name] for name in names]
            lua_args = ", ".join(["ARGV[1]", *(f"ARGV[{i + 2}]" for i in range(len(args)))])
            made = r.eval(
                f"{PRELUDE}\nreturn KEY.{builder.__name__}({lua_args})",
                0,
                family(42),
                *(a.isoformat() if isinstance(a, date) else a for a in args),
            )
            assert made.decode() == builder(42, *args), builder.__name__
    assert keys.dimension_bitmap(1, day, "x").startswith(keys.dimensions_prefix(1))
