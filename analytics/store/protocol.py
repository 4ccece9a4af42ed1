"""What Python and the Lua scripts must agree on, defined once: the separators inside field
names, the "(other)" value, and the binary layouts both sides pack and unpack.

Every script is pasted after lua_prelude() (store/scripts: Script), one line that makes
these a single Lua table, `PROTOCOL`: the Lua side reads PROTOCOL.FIELD_SEP, not a copy
of "\\30" of its own, so the two cannot drift (one local of the 200 a chunk may have).
"""

import struct
from typing import NamedTuple

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


class Section(NamedTuple):
    """A run of a script call's ARGV, and of its KEYS: named values first (`fields`,
    `keys`), then records of len(record) values and len(record_keys) keys each, as many as
    the caller sends. The call's first ARGV is a table of where each section starts, so no
    count is sent and no reader walks a cursor: Call builds it, lib/chunk.lua reads it."""

    fields: tuple[str, ...] = ()
    record: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    record_keys: tuple[str, ...] = ()


GROUPS = Section(
    fields=("quota",),  # (the day's quota of distinct names)
    record=("name", "count", "visitors"),  # (visitors: u16 big-endian indexes into the digests)
    keys=("other_visitors", "other_count"),  # (where names past the quota count)
    record_keys=("visitors", "count"),
)

# record_batch.lua's call: one day's chunk of a batch (the script and its libraries say
# what each value means). The first section's keys are named after store/keys.py's builders.
RECORD_BATCH: dict[str, Section] = {
    "head": Section(
        fields=(
            "id_ttl",  # TTL of a daily-salt id map and its counter, 0 for none
            "track_new",  # "1" to track new visitors (stable salt), "0" not to
            "mark",  # this call's mark in `applied`, "" for none
            "mark_ttl",
            "day_number",  # days since 2000-01-01
            "day",  # ISO
            "new_visitors_prefix",  # an older day's new-visitor bitmap is this and its ISO day
            "dirty",  # "1" to mark the day dirty
            "closed",  # "1" for a day before the writer's today: its closed_epochs counter moves
            "digests",  # the distinct visitors' digests, 16 bytes each, as one string
            "pageviews",
        ),
        keys=(
            "visitor_ids",
            "visitor_id_counter",
            "active",
            "new_visitors",
            "site_visitors",
            "pageviews",
            "pages_index",
            "events_index",
            "page_search",
            "live_tick",
            "first_days",
            "dirty_days",
            "closed_epochs",
            "applied",
            "page_rank",
            "latest_first_day",
        ),
    ),
    "limits": Section(record=("interval_ms", "burst", "cost"), record_keys=("bucket",)),
    "dropped": Section(record=("reason", "count"), keys=("hash",)),  # (analytics/dropped.py)
    "pages": GROUPS,
    "events": GROUPS,
    "property_groups": Section(  # "event SEP property SEP value"
        fields=("value_quota", "name_quota", "total_quota"),
        record=("name", "count", "visitors", "property"),  # (property: 1-based, into "properties")
        keys=("index", "sizes"),
        record_keys=("visitors", "count"),
    ),
    "properties": Section(record=("name",), record_keys=("other_visitors", "other_count")),  # "event SEP property"
    "revenue": Section(record=("event_currency", "hundredths"), keys=("hash",)),
    "places": Section(record=("longitude", "latitude", "city"), keys=("geo",)),
    "minutes": Section(fields=("ttl",), record=("visitors",), record_keys=("visitors",)),
    "hours": Section(record=("pageviews", "visitors"), record_keys=("visitors", "pageviews")),
    "search": Section(fields=("cap", "channel")),
    "visits": Section(  # (lib/visits.lua)
        fields=("session_ttl", "timeout", "quota", "prefix", "segment_values", "pinned", "events"),
        keys=("sessions_now", "sessions_before", "parts_now", "parts_before"),
    ),
    "previous": Section(record=("visitor", "digest")),
    "parts": Section(record=("id", "text")),
    "attrs": Section(record=("parts",)),
    "paths": Section(record=("path", "entry")),
}


def table_format(layout: dict[str, Section]) -> str:
    """The section table's struct: each section's first ARGV and first KEYS index, then
    one past the last of each (u32 big-endian)."""
    return ">" + "I" * (2 * len(layout) + 2)


class Call:
    """KEYS and ARGV of one call of a script whose arguments are a layout of sections:
    open each section in the layout's order with its named values and keys, then extend
    `args` and `keys` with its records. done() checks every section is whole and puts the
    section table first. (Records go straight into the lists: a call of a thousand
    events has hundreds of them, and the check at the end costs nothing per record.)"""

    __slots__ = ("layout", "keys", "args", "_starts", "_opened")

    def __init__(self, layout: dict[str, Section]):
        self.layout = layout
        self.keys: list = []
        self.args: list = [b""]  # (the section table, written by done())
        self._starts: list[int] = []
        self._opened: list[str] = []

    def section(self, name: str, keys: dict | None = None, **fields) -> None:
        section = self.layout[name]
        expected = list(self.layout)[len(self._opened)] if len(self._opened) < len(self.layout) else None
        if name != expected:
            raise ValueError(f"section {name!r} opened where {expected!r} comes")
        if set(fields) != set(section.fields) or set(keys or ()) != set(section.keys):
            raise ValueError(f"section {name!r} takes {section.fields} and keys {section.keys}")
        self._starts += (len(self.args) + 1, len(self.keys) + 1)  # (1-based, as Lua reads them)
        self._opened.append(name)
        self.args += [fields[field] for field in section.fields]
        if keys:
            self.keys += [keys[key] for key in section.keys]

    def done(self) -> tuple[list, list]:
        if len(self._opened) != len(self.layout):
            raise ValueError(f"sections missing: {list(self.layout)[len(self._opened) :]}")
        starts = [*self._starts, len(self.args) + 1, len(self.keys) + 1]
        for i, section in enumerate(self.layout.values()):
            values = starts[2 * i + 2] - starts[2 * i] - len(section.fields)
            named_keys = starts[2 * i + 3] - starts[2 * i + 1] - len(section.keys)
            records = values // len(section.record) if section.record else 0
            if (values != records * len(section.record)) or named_keys != records * len(section.record_keys):
                name = self._opened[i]
                raise ValueError(f"section {name!r}: {values} values and {named_keys} keys are not whole records")
        self.args[0] = struct.pack(table_format(self.layout), *starts)
        return self.keys, self.args


class LuaCode(str):
    """Lua source, pasted into the prelude as it is."""


def lua_reader(layout: dict[str, Section]) -> str:
    """A Lua function of the unpacked section table that returns the call's sections:
    {v = every named value, k = every named key, each as "<section>_<name>", exact =
    whether the sections without records hold just their names, and, for each section
    with records, <section> = {n = its records, at, key_at (its first record's ARGV and
    KEYS index), stop, key_stop (one past its last), width, key_width}}. Written out for
    this layout, and flat, because a loop over the layout in Lua, then a table per section
    and per kind of name, cost more (measured, in a loop of reads: 26 µs, then 8, against
    3 for this; in a 1-event call the read costs ~13 µs of ~290, its allocations paying
    for the collector too)."""
    values: list[str] = []
    named_keys: list[str] = []
    sections: list[str] = []
    exact: list[str] = []
    for i, (name, section) in enumerate(layout.items()):
        at, key_at, stop, key_stop = (f"t[{2 * i + j}]" for j in (1, 2, 3, 4))
        values += (f"{name}_{field} = A[{at} + {j}]" for j, field in enumerate(section.fields))
        named_keys += (f"{name}_{key} = K[{key_at} + {j}]" for j, key in enumerate(section.keys))
        width, key_width = len(section.record), len(section.record_keys)
        if not (width or key_width):  # (a section of named values and keys only: exactly those)
            exact.append(f"{stop} - {at} == {len(section.fields)} and {key_stop} - {key_at} == {len(section.keys)}")
        else:
            first, first_key = f"{at} + {len(section.fields)}", f"{key_at} + {len(section.keys)}"
            sections.append(
                f"{name} = {{n = ({stop} - ({first})) / {width}, at = {first}, key_at = {first_key}, "
                f"stop = {stop}, key_stop = {key_stop}, width = {width}, key_width = {key_width}}}"
            )
    body = ", ".join(
        [
            f"v = {{{', '.join(values)}}}",
            f"k = {{{', '.join(named_keys)}}}",
            f"exact = {' and '.join(exact)}",
            *sections,
        ]
    )
    return f"function(t) local A, K = ARGV, KEYS return {{{body}}} end"


LUA = {
    "FIELD_VALUE_SEP": FIELD_VALUE_SEP,
    "FIELD_SEP": FIELD_SEP,
    "GROUP_SEP": GROUP_SEP,
    "OTHER": OTHER,
    "COUNTS": COUNTS_LUA,
    "EVENT": EVENT_FORMAT,
    "FIRST_DAYS_MOVED": FIRST_DAYS_MOVED,
    "RECORD_BATCH": {"format": table_format(RECORD_BATCH), "read": LuaCode(lua_reader(RECORD_BATCH))},
}


def _lua(value) -> str:
    """A Lua literal: numbers as written, strings single-quoted with every byte outside
    printable ASCII (and quotes, backslashes) as a decimal escape, tuples as lists and
    dicts as tables."""
    if isinstance(value, LuaCode):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, tuple):
        return "{" + ", ".join(map(_lua, value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{name} = {_lua(item)}" for name, item in value.items()) + "}"
    return "'" + "".join(c if " " <= c <= "~" and c not in "'\\" else f"\\{ord(c)}" for c in value) + "'"


def lua_prelude() -> str:
    """The one line pasted in front of every script."""
    return f"local PROTOCOL = {_lua(LUA)}"
