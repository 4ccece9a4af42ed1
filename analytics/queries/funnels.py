"""Funnels: how many visitors went through each step of a site's funnel over a range.

A step is a page (a path, or a pattern: /blog/*) or a custom event (analytics.models
.Funnel). Each day, a step's visitors are the OR of its values' day bitmaps (the same ones
filters use; a filter narrows them with the segment's day). Reached-by-day sets are built
one day at a time:

    R1(d) = R1(d-1) OR step1(d)
    Rk(d) = Rk(d-1) OR (stepk(d) AND Rk-1(d))

so a visitor reaches step k when they did it on some day of the range no earlier than the
first day they reached step k-1; the answer for step k is BITCOUNT(Rk(last day)), exact
under that meaning. Order inside a day is not known: two steps done the same day count in
either order (a visitor who signed up at 9:00 and saw the pricing page at 17:00 passes
"pricing, then signup"). A step that needs a value without a bitmap that day (a page
pattern's page past the day's first pages) makes the answer an estimate, and it says so.
"""

from datetime import date

import redis

from ..models import Funnel
from ..periods import days_between
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import SCRATCH_TTL_MS, queue_union, scratch
from . import segments
from .stored import day_totals


def funnel(
    r: redis.Redis, site: SiteInfo, funnel_: Funnel, start: date, end: date, filters=()
) -> tuple[list[dict], bool]:
    """[{"step", "visitors", "conversion_rate" (% of step 1), "dropoff" (left since the
    step before)}], and whether any number is estimated."""
    steps = funnel_.step_list()
    days = days_between(start, end)
    with scratch(r, site.id) as tmp:
        segment = segments.build(r, site, filters, days, tmp)
        pages = (
            segments.day_members(r, site, days, "page")
            if any(kind == "page" and "*" in value for kind, value in steps)
            else {}
        )
        present = {
            kind: segments.present(r, site, days, kind, [v for k, v in steps if k == kind and "*" not in v])
            for kind in ("page", "event")
        }
        estimated = segment.estimate_over(days)
        # (a day whose page keys expired has no page index left to say whether a page step
        # had visitors without a bitmap: only its bitmaps count, and the answer says so)
        sealed_pages = {day for day, t in day_totals(site, days).items() if t.pages_sealed}
        reached = [tmp.key(f"reached:{k}") for k in range(len(steps))]
        pipe = r.pipeline(transaction=False)
        for day in days:
            for k, (kind, value) in enumerate(steps):
                listed = pages[day] if kind == "page" and "*" in value else present[kind][day]
                names, complete = segments.value_fields(kind, value, segment.bitmapped[day], listed)
                unlisted = kind == "page" and day in sealed_pages and ("*" in value or not names)
                estimated = estimated or not complete or unlisted
                if not names:
                    continue
                did = tmp.key(f"did:{k}:{day}")
                queue_union(pipe, did, [keys.dimension_bitmap(site.id, day, name) for name in names])
                if filters:
                    pipe.bitop("AND", did, did, segment.keys[day])
                if k > 0:
                    pipe.bitop("AND", did, did, reached[k - 1])
                pipe.bitop("OR", reached[k], reached[k], did)
                pipe.pexpire(reached[k], SCRATCH_TTL_MS)
                pipe.unlink(did)
            if len(pipe) > 2000:
                pipe.execute()
                pipe = r.pipeline(transaction=False)
        for key in reached:
            pipe.bitcount(key)
        counts = [int(n) for n in pipe.execute()[-len(steps) :]]
    rows = []
    for k, ((kind, value), n) in enumerate(zip(steps, counts)):
        rows.append(
            {
                "step": value if kind == "page" else f"{Funnel.EVENT}{value}",
                "visitors": n,
                "conversion_rate": round(100 * n / counts[0], 2) if counts[0] else 0.0,
                "dropoff": counts[k - 1] - n if k else 0,
            }
        )
    return rows, estimated
