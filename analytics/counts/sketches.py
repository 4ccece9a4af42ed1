"""Day sketches: a day's HyperLogLogs kept past its raw keys' expiry.

A day's raw keys expire by the site's policy (rollups/expiry.py); its counts stay as rows.
Counts cannot be unioned: a filter's visitors over thirty such days, or two filters
combined on one, were guessed from them with no bound (the site's repeat ratio read 873
visitors of a page against a truth of 2,013). So each HLL of the day (the site's, each
page's, custom event's and visit value's) is also kept as a row (DaySketch) shortly
before its keys expire (rollups/sketching.py), read with GET: an HLL is a string, and the
same bytes SET back on any server count the same. A query over such days sets the
sketches it needs into scratch keys (thaw()) and counts them as it counts a live day's
HLLs: PFCOUNT of unions, ±0.81% each.

A visit value that kept no HLL (its bitmap stood in for it: counts/fold.py) and was not
folded yet (a backfill's day, whose keys go 48 hours after its rollup) gets one made in a
scratch key from its bitmap's set bits, which are the same dense ids ingest adds
to HLLs, so the sketch is the HLL ingest would have made.

Size: a sparse HLL (up to a few hundred visitors) is tens to hundreds of bytes, a dense
one 12,304 (about 9 KB compressed); a day holds a few dense ones (the site's, its top
values) and many sparse ones.
"""

import zlib
from collections.abc import Iterable
from datetime import date
from typing import cast

import redis

from .. import dimensions
from ..models import DaySketch
from ..store import keys
from ..store.scratch import SCRATCH_TTL_MS, Scratch
from .fold import bitmap_only, queue_pfadd_bits

SITE = ""  # the field of the site's own HLL
PAGE_PREFIX = dimensions.field("page", "")  # (a page's field starts with this)


def hll_key(site_id: int, day: date, field: str) -> str:
    """The live HLL of a field ("" the site's) on a day."""
    return keys.site_visitors(site_id, day) if field == SITE else keys.field_visitors(site_id, day, field)


def day_fields(
    r: redis.Redis, site_id: int, days: list[date], pages: bool = True, daily: bool = True
) -> dict[date, list[str]]:
    """{day: its fields with an HLL (or a bitmap standing in for one)}: with `pages`, each
    page's; with `daily`, the site's, each custom event's and visit value's (the two
    families of keys that expire apart: rollups/expiry.py)."""
    pipe = r.pipeline(transaction=False)
    for day in days:
        pipe.smembers(keys.pages_index(site_id, day))
        pipe.smembers(keys.events_index(site_id, day))
        pipe.smembers(keys.dimension_fields(site_id, day))
    answers = iter(pipe.execute())
    found = {}
    for day in days:
        paths, events, fields = (cast(set[bytes], next(answers)) for _ in range(3))
        found[day] = [
            *(dimensions.field("page", p.decode()) for p in (paths if pages else ())),
            *(
                [SITE, *(dimensions.field("event", e.decode()) for e in events), *(f.decode() for f in fields)]
                if daily
                else []
            ),
        ]
    return found


def read(r: redis.Redis, site_id: int, day: date, fields: list[str], tmp: Scratch) -> dict[str, bytes]:
    """{field: compressed HLL} of these fields of a day (those with visitors). A value
    whose bitmap stands in for its HLL (bitmap-only, or half folded) gets one built from
    the bitmap in a scratch key, beside what its HLL holds already."""
    only = bitmap_only(r, site_id, [day])[day]
    raw: dict[str, bytes] = {}
    for start in range(0, len(fields), 500):
        chunk = [f for f in fields[start : start + 500] if f not in only]
        for name, value in zip(chunk, r.mget([hll_key(site_id, day, f) for f in chunk])):
            if value:
                raw[name] = cast(bytes, value)
    for name in sorted(only.intersection(fields)):
        built = tmp.key("sketch-build")
        pipe = r.pipeline(transaction=False)
        pipe.pfmerge(built, hll_key(site_id, day, name))
        pipe.pexpire(built, SCRATCH_TTL_MS)
        queue_pfadd_bits(pipe, r, keys.dimension_bitmap(site_id, day, name), built)
        pipe.get(built)
        pipe.unlink(built)
        value = pipe.execute()[-2]
        if value:
            raw[name] = cast(bytes, value)
    return {name: zlib.compress(value, 6) for name, value in raw.items()}


def thaw(r: redis.Redis, site_id: int, wanted: Iterable[tuple[date, str]], tmp: Scratch) -> dict[tuple[date, str], str]:
    """Set the stored sketches of these (day, field)s into scratch keys: {(day, field):
    its key} for those a sketch was stored of (a field missing had no visitors that day,
    or its day was rolled up before sketches were kept)."""
    names = {(day, DaySketch.field_key(name)): name for day, name in wanted}
    days, hashes = sorted({day for day, _ in names}), sorted({key for _, key in names})
    found: dict[tuple[date, str], str] = {}
    pipe = r.pipeline(transaction=False)
    for start in range(0, len(hashes), 500):  # (one query a 500 fields, whatever the days)
        rows = DaySketch.objects.filter(site_id=site_id, date__in=days, key__in=hashes[start : start + 500])
        for day, key, sketch in rows.values_list("date", "key", "sketch"):
            if (day, key) in names:
                dest = tmp.key(f"thawed:{day.isoformat()}:{key}")
                pipe.set(dest, zlib.decompress(bytes(sketch)), px=SCRATCH_TTL_MS)
                found[day, names[day, key]] = dest
    pipe.execute()
    return found
