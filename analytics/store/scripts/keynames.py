"""The key names the Lua scripts build, generated from store/keys.py.

A script is sent a family's base (the visitor-id map's, the first days', the dimensions'
prefix) and names that family's keys from it; each such name is a function of a table
`KEY` in the generated prelude, made by calling the Python builder with placeholders:
`keys.visitor_id_bucket(site, n)` is `<ids base>:p<n>`, so KEY.visitor_id_bucket(base, n)
returns base .. ':p' .. n. A script never spells a key's suffix itself, and a name
changed in keys.py changes in the scripts with it (tests/test_script_errors.py checks
each against Python's, on a real server).
"""

import inspect

from .. import keys


class Placeholder(str):
    """Stands in for a key builder's argument: formats as itself, and as itself where a
    date or a time is formatted (here, and in manage.py keys_doc)."""

    def __format__(self, spec):
        return str(self)

    def isoformat(self, *args, **kwargs):
        return self

    def strftime(self, *args):
        return self

    def astimezone(self, *args):
        return self

    def replace(self, *args, **kwargs):
        return self


# The families the scripts build names in: their base's builder, and each key's.
FAMILIES = {
    keys.visitor_ids: (
        keys.visitor_id_bucket,
        keys.visitor_id_hash_bucket,
        keys.visitor_id_buckets,
        keys.visitor_id_packed,
        keys.visitor_id_elements,
        keys.visitor_id_narrow,
    ),
    keys.first_days: (keys.first_days_runs, keys.first_days_moved),
    keys.site_prefix: (  # (a day's page, custom event and property keys: scripts/expire_day.lua)
        keys.pages_index,
        keys.events_index,
        keys.props_index,
        keys.page_visitors,
        keys.page_pageviews,
        keys.event_count,
        keys.event_visitors,
        keys.prop_count,
        keys.prop_visitors,
    ),
    keys.dimensions_prefix: (  # (the day is an argument, as in keys.py)
        keys.dimension_counts,
        keys.dimension_fields,
        keys.dimension_sizes,
        keys.dimension_visitors,
        keys.dimension_bitmap,
        keys.dimension_bitmapped,
        keys.dimension_bitmap_sizes,
        keys.dimension_bitmap_only,
        keys.dimension_folding,
    ),
}
_MARK = "\0"


def _lua_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def lua_function(family, builder) -> str:
    """One KEY function: `function KEY.<builder>(base, <its other arguments>) return ... end`."""
    names = [name for name in inspect.signature(builder).parameters if name != "site_id"]
    made = builder(Placeholder(f"{_MARK}site_id{_MARK}"), *(Placeholder(f"{_MARK}{name}{_MARK}") for name in names))
    base = family(Placeholder(f"{_MARK}site_id{_MARK}"))
    if not made.startswith(base):
        raise ValueError(f"keys.{builder.__name__} does not start with its family's base")
    pieces = ["base"]
    for n, piece in enumerate(made[len(base) :].split(_MARK)):
        if piece:
            pieces.append(piece if n % 2 else _lua_string(piece))  # (odd pieces are the arguments' names)
    return f"function KEY.{builder.__name__}({', '.join(['base', *names])}) return {' .. '.join(pieces)} end"


def lua_key_functions() -> str:
    """The prelude's lines that define KEY."""
    return "\n".join(
        [
            "local KEY = {}",
            *(lua_function(family, builder) for family, members in FAMILIES.items() for builder in members),
        ]
    )
