"""Breakdown parts kept ready: a range's values over its closed days.

Why: a 30-day breakdown sums 30 days of rows and counts each value it shows as a union of
30 day HLLs (or an OR of 30 day bitmaps, where exact) on every view, though 28 of those
days no longer change. A range's days before yesterday (site time) are its closed head:
the first view keeps what they give in Redis (each value's summed counts; then, per value
counted, its merged HLL and, where its bitmaps are complete, their OR), and later views
count a value as the union of that key and its open days' keys. Visit dimensions
(queries/breakdown.py), top pages (queries/pages.py: a page's union merges its cover,
weeks and months included) and the candidates of filtered breakdowns read them. At
300,000 events a 30-day country breakdown went from 31 ms to 9 warm (31 cold), top
pages from 39 to 17-20 warm (66 cold: the first view writes what it keeps).

Never stale: everything a part keeps is named by a token of its days, their state (which
import a day came from; whether its raw keys, page keys or bitmaps have expired) and each
day's closed epoch (keys.closed_epochs: a counter per day). A day's counter moves in the
same atomic step as any write to it once closed: record_batch.lua on an event of a day
before the writer's today (readers keep only days before yesterday: one day of margin, so
a writer and a reader on either side of midnight cannot race), lib/visits.lua when a visit
adds to an older day, and the end of a rollup of closed days (rows rewritten, keys folded).
A day whose keys expire changes the token by its state (the rows' sealed times), not its
counter. A part whose token no longer matches is never read again; its keys expire. A
counter per day, not one per site: yesterday's late events (a visit across midnight, a
tracker's queue) move only yesterday's, which no part holds, so the parts made after the
nightly rollup stay good all day.

How long a part lives: an hour (KEEP_MS) from the view that made it. The nightly warm-up
(queries/warm.py) makes, right after the night's rollup, the parts of the heads read
lately that end the day before yesterday (a range ending today or yesterday: the
dashboard's 7 and 30 days, month to date...), and those live until the site's next
midnight, when such a range's head moves on anyway: the first view of the morning is as
quick as the second. Only the warm-up makes parts that last (a few heads a site a
night), so a stream of views and late events keeps no more than an hour's parts. Reads
of those heads are noted for it (keys.kept_read).
"""

import contextlib
import contextvars
import functools
import hashlib
import struct
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from datetime import time as clock_time
from typing import cast

import redis

from ..counts import fold, sketches
from ..sites import SiteInfo
from ..store import keys
from ..store.scratch import queue_union, scratch
from .exact import exact_sources
from .stored import DayTotals

KEEP_MS = 3600 * 1000  # a part's keys live an hour after they are made (but the warm-up's)
READ_DAYS = 8  # a head read within this many days is noted for the warm-up (a weekly reader's too)
MIN_DAYS = 3  # a range with fewer closed days reads them as they are
NONE = DayTotals(0, 0, 0, None)  # (a day with no stored row)
MADE = b"\x00"  # a sums hash's own field (no value is this): made, even when no value had a visit


_LASTING: contextvars.ContextVar[bool] = contextvars.ContextVar("kept_lasting", default=False)


@contextlib.contextmanager
def until_midnight():
    """Parts made or read within live until the site's next midnight where their head ends
    the day before yesterday (the nightly warm-up's: queries/warm.py)."""
    token = _LASTING.set(True)
    try:
        yield
    finally:
        _LASTING.reset(token)


def closed_head(site: SiteInfo, days: list[date]) -> list[date]:
    """The days of a range that a part may keep: those before yesterday."""
    last = site.today() - timedelta(days=2)
    return [day for day in days if day <= last]


class Part:
    """A range's closed head, as breakdown() reads it: `days` (the head's days, none of
    them imported or gone: their keys count), `gone` (their sketches count)."""

    def __init__(self, r: redis.Redis, site: SiteInfo, head: list[date], totals: dict[date, DayTotals]):
        self.r, self.site, self.last = r, site, head[-1]
        imported = {day: totals[day].imported_log for day in head if day in totals and totals[day].imported}
        self.gone = [d for d in head if d not in imported and d in totals and totals[d].sealed and totals[d].dau]
        self.days = [day for day in head if day not in imported and day not in self.gone]
        self.imported = set(imported)
        self.today = site.today()
        # (a head ending the day before yesterday: a range ending today or yesterday, noted and kept the day)
        self.back = (self.today - head[0]).days if head[-1] == self.today - timedelta(days=2) else None
        epochs = cast(list[bytes | None], r.hmget(keys.closed_epochs(site.id), [day.isoformat() for day in head]))
        state = ",".join(  # (a sealed day's epoch: no write reaches it, and rollups/expiry.py forgets it)
            f"{day:%Y%m%d}:{imported.get(day, '')}:{int(t.segments_sealed)}{int(t.pages_sealed)}:"
            + ("" if t.sealed else (e or b"0").decode())
            for day, t, e in ((day, totals.get(day, NONE), e) for day, e in zip(head, epochs))
        )
        gone = ",".join(f"{day:%Y%m%d}" for day in self.gone)
        self.token = hashlib.sha1(f"{state}|{gone}".encode()).hexdigest()[:20]

    @functools.cached_property
    def lasting(self) -> bool:
        """Made by the warm-up, over a head ending the day before yesterday: kept till midnight."""
        return self.back is not None and _LASTING.get()

    @functools.cached_property
    def keep_ms(self) -> int:
        """How long what this part makes lives: KEEP_MS, or until the site's next midnight."""
        if not self.lasting:
            return KEEP_MS
        midnight = datetime.combine(self.today + timedelta(days=1), clock_time(0), tzinfo=self.site.tz)
        return max(KEEP_MS, int((midnight.timestamp() - time.time()) * 1000))  # (timestamps: a DST day too)

    def _last(self, names: list[str]):
        """The warm-up's parts that a view made already: kept till midnight from now on."""
        if self.lasting and names:
            pipe = self.r.pipeline(transaction=False)
            for name in names:
                pipe.pexpire(name, self.keep_ms)
            pipe.execute()

    def _key(self, name: str) -> str:
        return keys.kept(self.site.id, self.token, name)

    def table(
        self, name: str, columns: tuple[str, ...], make: Callable[[], dict[str, dict[str, int]]]
    ) -> dict[str, dict[str, int]]:
        """{value: {column: a whole number}} over the head: kept, or made by `make` and kept."""
        key, packing = self._key(name), struct.Struct(f"<{len(columns)}q")
        pipe = self.r.pipeline(transaction=False)
        pipe.hgetall(key)
        if self.back is not None:  # (the nightly warm-up makes it again for tomorrow: queries/warm.py)
            pipe.hset(keys.kept_read(self.site.id), f"{self.back}:{name}", int(time.time() * 1000))
            pipe.expire(keys.kept_read(self.site.id), READ_DAYS * 86400)
        found = cast(dict[bytes, bytes], pipe.execute()[0])
        if MADE in found:
            del found[MADE]
            self._last([key])
            return {value.decode(): dict(zip(columns, packing.unpack(packed))) for value, packed in found.items()}
        made = make()
        pipe = self.r.pipeline(transaction=False)
        items = [(value, packing.pack(*(row[c] for c in columns))) for value, row in made.items()]
        pipe.hset(key, MADE, b"")
        for start in range(0, len(items), 1000):
            pipe.hset(key, mapping=dict(items[start : start + 1000]))
        pipe.pexpire(key, self.keep_ms)
        pipe.execute()
        return made

    def bitmaps(
        self,
        fields: list[str],
        days: list[date] | None = None,
        present: Callable[[list[str]], dict[str, set[date]]] | None = None,
    ) -> dict[str, str]:
        """{field: the OR of its head's day bitmaps} for those of `fields` whose bitmaps hold
        every visitor it had over the head (queries/exact.py); the others are left to
        unions(). Made where missing, its answer kept for each field. A visit value's
        days are the head's `days` (a gone day's sketch makes it an estimate); a page's are
        the head's days not imported, `present` saying which it had visitors on (its day
        HLLs expire before its rows)."""

        def made(ask: list[str]) -> set[str]:
            if present is not None:
                sources = exact_sources(self.r, self.site, days or [], ask, present(ask))
            else:
                sources = exact_sources(self.r, self.site, self.days, ask)
            if present is None and self.gone and sources:  # (a sketch on a gone day: counted from HLLs)
                with scratch(self.r, self.site.id) as tmp:
                    frozen = sketches.thaw(self.r, self.site.id, [(d, f) for f in sources for d in self.gone], tmp)
                for _, f in frozen:
                    sources.pop(f, None)
            pipe = self.r.pipeline(transaction=False)
            for f, bitmaps in sources.items():
                queue_union(pipe, self._key(f"b:{f}"), bitmaps, self.keep_ms)
            pipe.execute()
            return set(sources)

        exact = {f: self._key(f"b:{f}") for f in self.flags("exact", fields, made)}
        self._last(list(exact.values()))
        return exact

    def flags(self, name: str, fields: list[str], make: Callable[[list[str]], set[str]]) -> set[str]:
        """Those of `fields` for which a yes/no over the head holds (`make` says which of
        the fields asked it holds for), kept under `name`."""
        key = self._key(name)
        known = dict(zip(fields, self.r.hmget(key, fields))) if fields else {}
        ask = [f for f, flag in known.items() if flag is None]
        if ask:
            yes = make(ask)
            pipe = self.r.pipeline(transaction=False)
            pipe.hset(key, mapping={f: b"1" if f in yes else b"0" for f in ask})
            pipe.pexpire(key, self.keep_ms)
            pipe.execute()
            known.update({f: b"1" if f in yes else b"0" for f in ask})
        else:
            self._last([key])
        return {f for f, flag in known.items() if flag == b"1"}

    def unions(
        self, fields: list[str], parts: Callable[[str], list[str]] | None = None, name: str = "u"
    ) -> dict[str, str]:
        """{field: an HLL of its visitors over the head}, made where missing: a field's day
        HLLs (a visit value's, a page's, an event's) and, for gone days, its sketches,
        merged; or the keys `parts`
        names (a page's cover: queries/pages.py), under `name`."""
        union = {f: self._key(f"{name}:{f}") for f in fields}
        pipe = self.r.pipeline(transaction=False)
        for key in union.values():
            pipe.exists(key)
        missing = [f for f, there in zip(fields, pipe.execute()) if not there]
        self._last([union[f] for f in fields if f not in missing])
        if not missing:
            return union
        if parts is not None:
            pipe = self.r.pipeline(transaction=False)
            for f in missing:
                pipe.pfmerge(union[f], *parts(f))
                pipe.pexpire(union[f], self.keep_ms)
            pipe.execute()
            return union
        fold.ensure_hlls(self.r, self.site.id, [(day, f) for f in missing for day in self.days])
        with scratch(self.r, self.site.id) as tmp:
            thawed = sketches.thaw(self.r, self.site.id, [(d, f) for f in missing for d in self.gone], tmp)
            pipe = self.r.pipeline(transaction=False)
            for f in missing:
                merged = [keys.field_visitors(self.site.id, day, f) for day in self.days]
                merged += [key for (_, field), key in thawed.items() if field == f]
                pipe.pfmerge(union[f], *merged)
                pipe.pexpire(union[f], self.keep_ms)
            pipe.execute()
        return union
