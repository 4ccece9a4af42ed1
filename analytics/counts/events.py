"""Each custom event's numbers on a day, and each of its property values', from the raw
keys record_batch.lua writes: exact event counts, and visitors from the day's HLL (an
estimate, never shown above the events)."""

from datetime import date

import redis

from ..dimensions import SEP
from ..store import keys, protocol

OTHER = protocol.OTHER


def event_days(
    r: redis.Redis, site_id: int, days: list[date]
) -> dict[date, dict[tuple[str, str, str], tuple[int, int]]]:
    """{day: {(event, property, value): (visitors, events)}}, property and value "" for the
    event itself; two round trips, whatever the number of days. Events past the day's
    quota of names are left out (their "(other)" bucket is no event of its own), as are
    property groups of before the per-property quota (a "(other)" of all properties)."""
    if not days:
        return {}
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.smembers(keys.events_index(site_id, day))
        pipe.smembers(keys.props_index(site_id, day))
    listed = iter(pipe.execute())
    wanted: list[tuple[date, tuple[str, str, str], str, str]] = []  # (day, row, HLL key, counter key)
    for day in days:
        for raw in next(listed):
            name = raw.decode()
            if name != OTHER:
                wanted.append(
                    (day, (name, "", ""), keys.event_visitors(site_id, day, name), keys.event_count(site_id, day, name))
                )
        for raw in next(listed):
            group = raw.decode()
            parts = group.split(SEP, 2)
            if len(parts) == 3:
                wanted.append(
                    (day, tuple(parts), keys.prop_visitors(site_id, day, group), keys.prop_count(site_id, day, group))
                )
    pipe = r.pipeline(transaction=False)
    for _, _, hll, counter in wanted:
        pipe.pfcount(hll)
        pipe.get(counter)
    answers = iter(pipe.execute())
    result: dict[date, dict] = {day: {} for day in days}
    for day, row, _, _ in wanted:
        visitors, events = next(answers), int(next(answers) or 0)
        result[day][row] = (min(visitors, events), events)
    return result
