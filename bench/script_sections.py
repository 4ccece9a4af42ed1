"""Where the ingest script's time goes, section by section: what each part of an event's
counting costs Redis (the features of issues 12 and 13 each have their price here).

The script's sources mark their sections with `--@section <name>` comment lines (inert in
production). This bench loads a copy of the script where each mark reads Lua's os.clock()
(the server process's CPU time: Redis's TIME is frozen inside a script), runs calls of 1
and of 1,000 events through it, and sums the seconds of each section. The last row is the
copy's own time (INFO commandstats): read it beside the real script's time for the same
sizes of call in the table above (the clock's own cost is the difference). Redis 6.2
scripts have no os.clock(): there the table is left out.

The copy also times each redis.call (the server's own command, with the conversion of its
arguments and reply), by section and by command: what is left of a section is Lua's own
work (parsing, tables, the collector). The commands are the floor of this design: the
writes the counting needs, already one command per key per call.
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
local __in_calls, __by_command, __count = {}, {}, {}
local function __call(command, ...)
  local t = __clock()
  local reply = redis.call(command, ...)
  local spent = __clock() - t
  __in_calls[__section] = (__in_calls[__section] or 0) + spent
  __by_command[command] = (__by_command[command] or 0) + spent
  __count[command] = (__count[command] or 0) + 1
  return reply
end
"""
END = "return {m, pageviews, moved}"
REPORT = """__tick('')  -- (closes the last section)
local __out = {}
for _, name in ipairs(__order) do
  __out[#__out + 1] = name; __out[#__out + 1] = tostring(__spent[name]); __out[#__out + 1] = tostring(__in_calls[name] or 0)
end
for command, spent in pairs(__by_command) do
  __out[#__out + 1] = 'command ' .. command; __out[#__out + 1] = tostring(spent); __out[#__out + 1] = tostring(__count[command])
end
return __out"""


def instrumented(source: str) -> str:
    """The script with a clock reading at each section mark and around each redis.call,
    returning {section, seconds, seconds in commands, ..., "command NAME", seconds, calls,
    ...}."""
    assert source.count(END) == 1, "the script's last return moved: update bench/script_sections.py"
    body = SECTION.sub(lambda m: f"{m.group(1)}__tick({m.group(2)!r})", source).replace("redis.call(", "__call(")
    return PRELUDE + body.replace(END, REPORT)


def prepared_groups(r, site, hits: list, sizes) -> list[tuple[int, list]]:
    """[(events per call, the prepared calls)] for each (size, calls) of `sizes`, cut from
    `hits` in order after 5,000 of them are recorded on an empty server (the day's sets and
    HLLs past their first writes: visitors new at first, then more and more returning, as
    on a new site). Sizes that `hits` has no room for are left out."""
    record = importlib.import_module("analytics.ingest.record")  # (the package exports a function of that name)
    now = datetime.now(UTC)
    r.execute_command("FLUSHALL", "SYNC")
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


def run(r, site, hits: list, sizes=((1, 300), (1000, 10))) -> list[tuple[str, list[str], list[tuple]]] | None:
    """Two tables over `hits` (validated, in time order), as (title, header, rows): µs an
    event by section per call size (and of it, in commands), and, for the biggest calls,
    by command. None where the server's scripts have no os.clock()."""
    try:
        r.eval("return os.clock()", 0)
    except redis.ResponseError:  # (Redis 6.2: no os library in scripts)
        return None
    from analytics.store.scripts import RECORD_BATCH

    sha = r.script_load(instrumented(RECORD_BATCH.source))
    columns, header = [], []
    for size, prepared in prepared_groups(r, site, hits, sizes):
        spent: dict[str, list[float]] = {}  # section -> [seconds, of them in commands] (in the order they ran first)
        commands: dict[str, list[float]] = {}  # command -> [seconds, calls]
        events = size * len(prepared)
        r.config_resetstat()
        for p in prepared:
            for keys, args in p.calls:
                reply = r.evalsha(sha, len(keys), *keys, *args)
                if reply and not isinstance(reply[0], bytes):
                    continue  # (an early return: a call of dropped events only, which counts nothing)
                for name, a, b in zip(reply[::3], reply[1::3], reply[2::3]):
                    name = name.decode()
                    into = (
                        commands.setdefault(name[8:], [0.0, 0.0])
                        if name.startswith("command ")
                        else spent.setdefault(name, [0.0, 0.0])
                    )
                    into[0] += float(a)
                    into[1] += float(b)
        stats = r.info("commandstats")["cmdstat_evalsha"]
        columns.append((spent, commands, stats["usec"] / events, events))
        header.append(f"{size:,}-event calls: us an event (in commands)")
    names = list(dict.fromkeys(name for spent, _, _, _ in columns for name in spent))

    def cell(pair, events):
        return f"{pair[0] * 1e6 / events:,.1f} ({pair[1] * 1e6 / events:,.1f})"

    rows = [(name, *(cell(spent.get(name, (0.0, 0.0)), events) for spent, _, _, events in columns)) for name in names]
    sums = [[sum(v[0] for v in spent.values()), sum(v[1] for v in spent.values())] for spent, _, _, _ in columns]
    rows.append(("sum of the sections (of it in commands)", *(cell(total, c[3]) for total, c in zip(sums, columns))))
    rows.append(("the instrumented call (commandstats)", *(f"{per_event:,.1f}" for _, _, per_event, _ in columns)))
    tables = [
        (
            "Where the ingest script's time goes (os.clock() at the --@section marks of its sources; in brackets, "
            "the part inside redis.call)",
            ["section", *header],
            rows,
        )
    ]
    _, commands, _, events = columns[-1]
    in_commands = sum(seconds for seconds, _ in commands.values())
    lines = [
        (name, f"{seconds * 1e6 / events:,.2f}", f"{calls * 1000 / events:,.0f}")
        for name, (seconds, calls) in sorted(commands.items(), key=lambda item: -item[1][0])
        if seconds * 1e6 / events >= 0.01
    ]
    lines.append(("all commands", f"{in_commands * 1e6 / events:,.2f}", ""))
    lines.append(
        (
            "Lua's own work (the call's sections less its commands)",
            f"{(sums[-1][0] - in_commands) * 1e6 / events:,.2f}",
            "",
        )
    )
    tables.append(
        (
            f"The ingest script's commands in {header[-1].split(':')[0]} (the floor of this design: one command per key per call)",
            ["command", "us an event", "calls per 1,000 events"],
            lines,
        )
    )
    return tables
