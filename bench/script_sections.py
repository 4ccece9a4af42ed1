"""Where the ingest script's time goes, section by section: what each part of an event's
counting costs Redis (the features of issues 12 and 13 each have their price here).

The script's sources mark their sections with `--@section <name>` comment lines (inert in
production). This bench loads a copy of the script where each mark reads Lua's os.clock()
(the server process's CPU time: Redis's TIME is frozen inside a script), runs calls of 1
and of 1,000 events through it, and sums the seconds of each section. The last row is the
copy's own time (INFO commandstats): read it beside the real script's time for the same
sizes of call in the table above (the clock's own cost is the difference). Redis 6.2
scripts have no os.clock(): there the table is left out.
"""
import importlib
import re
from datetime import UTC, datetime

import redis

SECTION = re.compile(r"^(\s*)--@section (.+)$", re.M)
PRELUDE = """local __clock = os.clock
local __spent, __order, __section, __at = {}, {'start of the call'}, 'start of the call', __clock()
local function __tick(name)
  local now = __clock()
  __spent[__section] = (__spent[__section] or 0) + (now - __at)
  if name ~= '' and not __spent[name] then __spent[name] = 0; __order[#__order + 1] = name end
  __section, __at = name, now
end
"""
END = "return {m, pageviews, moved}"
REPORT = """__tick('')  -- (closes the last section)
local __out = {}
for _, name in ipairs(__order) do __out[#__out + 1] = name; __out[#__out + 1] = tostring(__spent[name]) end
return __out"""


def instrumented(source: str) -> str:
    """The script with a clock reading at each section mark, returning {name, seconds...}."""
    assert source.count(END) == 1, "the script's last return moved: update bench/script_sections.py"
    body = SECTION.sub(lambda m: f"{m.group(1)}__tick({m.group(2)!r})", source)
    return PRELUDE + body.replace(END, REPORT)


def prepared_groups(r, site, hits: list, sizes) -> list[tuple[int, list]]:
    """[(events per call, the prepared calls)] for each (size, calls) of `sizes`, cut from
    `hits` in order after 5,000 of them are recorded on an empty server (the day's sets and
    HLLs past their first writes: visitors new at first, then more and more returning, as
    on a new site). Sizes that `hits` has no room for are left out."""
    record = importlib.import_module("analytics.ingest.record")  # (the package exports a function of that name)
    now = datetime.now(UTC)
    r.flushall()
    warm = 5000
    for at in range(0, warm, 1000):
        record.record(r, site, hits[at : at + 1000], now=now)
    out, at = [], warm
    for size, calls in sizes:
        calls = min(calls, (len(hits) - at) // size)
        if not calls:
            break
        group = [hits[at + i * size : at + (i + 1) * size] for i in range(calls)]
        at += size * calls
        out.append((size, [record.prepare(site, g, now=now) for g in group]))
    return out


def run(r, site, hits: list, sizes=((1, 300), (1000, 10))) -> tuple[list[str], list[tuple]] | None:
    """Rows (section, µs an event per call size...) over `hits` (validated, in time order), or
    None where the server's scripts have no os.clock()."""
    try:
        r.eval("return os.clock()", 0)
    except redis.ResponseError:  # (Redis 6.2: no os library in scripts)
        return None
    from analytics.store.scripts import RECORD_BATCH

    sha = r.script_load(instrumented(RECORD_BATCH.source))
    columns, header = [], []
    for size, prepared in prepared_groups(r, site, hits, sizes):
        spent: dict[str, float] = {}  # (in the order the sections ran first)
        events = size * len(prepared)
        r.config_resetstat()
        for p in prepared:
            for keys, args in p.calls:
                reply = r.evalsha(sha, len(keys), *keys, *args)
                for name, seconds in zip(reply[::2], reply[1::2]):
                    spent[name.decode()] = spent.get(name.decode(), 0.0) + float(seconds)
        stats = r.info("commandstats")["cmdstat_evalsha"]
        columns.append((spent, stats["usec"] / events, events))
        header.append(f"{size:,}-event calls: us an event")
    names = list(dict.fromkeys(name for spent, _, _ in columns for name in spent))
    rows = []
    for name in names:
        rows.append((name, *(f"{spent.get(name, 0.0) * 1e6 / events:,.1f}" for spent, _, events in columns)))
    rows.append(("sum of the sections", *(f"{sum(spent.values()) * 1e6 / events:,.1f}" for spent, _, events in columns)))
    rows.append(("the instrumented call (commandstats)", *(f"{per_event:,.1f}" for _, per_event, _ in columns)))
    return ["section", *header], rows
