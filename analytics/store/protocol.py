"""What Python and the Lua scripts must agree on, defined once: the separators inside field
names, the "(other)" value, and the binary layouts both sides pack and unpack.

Every script is pasted after lua_prelude() (store/scripts: Script), one line that makes
these a single Lua table, `PROTOCOL`: the Lua side reads PROTOCOL.FIELD_SEP, not a copy
of "\\30" of its own, so the two cannot drift (one local of the 200 a chunk may have).
"""

import struct

FIELD_VALUE_SEP = "\x1f"  # between a field's kind and its value: "page\x1f/path", "source\x1fGoogle"
FIELD_SEP = "\x1e"  # between the fields of a list a script is sent
GROUP_SEP = "\x1d"  # between the parts of a visit's fields (source, device, location, screen): lib/visits.lua
OTHER = "(other)"  # the value past a site's daily quota of distinct values
# A value's counts in its day hash (visits, bounces, duration, pageviews, exits): five
# signed 64-bit little-endian integers, as Lua's struct writes them and Python reads them.
COUNTS_LUA = "<i8i8i8i8i8"
COUNTS = struct.Struct("<5q")
# One event as ingest/record.py packs it for lib/visits.lua: visitor (index), time,
# kind, attributes, path (index), custom event (index).
EVENT_FORMAT = ">HIBIHH"
FIRST_DAYS_MOVED = 128  # ids per hash of first days a backfill moved earlier (lib/firstdays.lua)

LUA = {
    "FIELD_VALUE_SEP": FIELD_VALUE_SEP,
    "FIELD_SEP": FIELD_SEP,
    "GROUP_SEP": GROUP_SEP,
    "OTHER": OTHER,
    "COUNTS": COUNTS_LUA,
    "EVENT": EVENT_FORMAT,
    "FIRST_DAYS_MOVED": FIRST_DAYS_MOVED,
}


def _lua(value) -> str:
    """A Lua literal: numbers as written, strings single-quoted with every byte outside
    printable ASCII (and quotes, backslashes) as a decimal escape."""
    if isinstance(value, int):
        return str(value)
    return "'" + "".join(c if " " <= c <= "~" and c not in "'\\" else f"\\{ord(c)}" for c in value) + "'"


def lua_prelude() -> str:
    """The one line pasted in front of every script."""
    return "local PROTOCOL = {" + ", ".join(f"{name} = {_lua(value)}" for name, value in LUA.items()) + "}"
