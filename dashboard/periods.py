"""The period picker: `?period=30d` (or any of CHOICES) and
`?period=custom&from=YYYY-MM-DD&to=YYYY-MM-DD`, in the site's time zone.

The presets are Plausible's, with its documented keyboard shortcuts (static/periods.js
binds them; `?` lists them; its H, Last 24 hours, is left out: a period here is whole
days). Each period knows the one just before and just after it (the arrows, ← and
→): a day steps by a day, a calendar month or year by a month or year, any other range by
its own length; the step after one that reaches today is none.
"""

from dataclasses import dataclass
from datetime import date, timedelta

from analytics.periods import month_start, named_range, out_of_bounds

# (key, label, keyboard shortcut)
PRESETS = [
    ("realtime", "Realtime", "r"),
    ("today", "Today", "d"),
    ("yesterday", "Yesterday", "e"),
    ("7d", "Last 7 days", "w"),
    ("28d", "Last 28 days", "f"),
    ("30d", "Last 30 days", "t"),
    ("91d", "Last 91 days", "n"),
    ("month", "Month to date", "m"),
    ("last_month", "Last month", "p"),
    ("year", "Year to date", "y"),
    ("6mo", "Last 6 months", "s"),
    ("12mo", "Last 12 months", "l"),
    ("all", "All time", "a"),
    ("custom", "Custom range", "c"),
]
CHOICES = [(key, label) for key, label, _ in PRESETS]
OLD_KEYS = {"90d": "Last 90 days"}  # (links made before the presets were Plausible's still open)
DEFAULT = "30d"
MAX_DAYS = 731


@dataclass(frozen=True)
class Period:
    key: str
    start: date
    end: date
    error: str = ""

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    @property
    def label(self) -> str:
        if self.key == "custom" and self.start == self.end:
            return self.start.strftime("%-d %b %Y")
        return {**dict(CHOICES), **OLD_KEYS}[self.key]

    @property
    def query(self) -> str:
        """This period as a query string, for links that keep it."""
        if self.key == "custom":
            return f"period=custom&from={self.start.isoformat()}&to={self.end.isoformat()}"
        return f"period={self.key}"

    def previous(self) -> "Period":
        """The period of the same length just before this one (for the cards' changes)."""
        end = self.start - timedelta(days=1)
        return Period(self.key, end - timedelta(days=self.days - 1), end)

    def step(self, direction: int, today: date) -> "Period | None":
        """The period just before (-1) or after (+1) this one, as the arrows go: None after
        one that reaches today. A step back onto a preset's days is that preset."""
        found = self._step(direction, today)
        if found is None or found.key != "custom":
            return found
        for key in ("7d", "28d", "30d", "91d"):
            preset = parse({"period": key}, today)
            if (preset.start, preset.end) == (found.start, found.end):
                return preset
        return found

    def _step(self, direction: int, today: date) -> "Period | None":
        if self.key == "realtime" and direction < 0:
            return Period("today", today, today)
        if direction > 0 and self.end >= today:
            return None
        if self.days == 1:
            return _day(self.start + timedelta(days=direction), today)
        months = self._whole_months(today)
        if months:
            first = _add_months(self.start, months * direction)
            last = min(_add_months(first, months) - timedelta(days=1), today)
            if months == 1:
                return _month(first, today)
            if months == 12 and first.month == 1:
                return _year(first.year, today)
            running = {6: "6mo", 12: "12mo"}.get(months) if last == today else None
            return Period(running or "custom", first, last)
        shift = timedelta(days=self.days * direction)
        return Period("custom", self.start + shift, min(self.end + shift, today))

    def _whole_months(self, today: date) -> int:
        """The calendar months the period is (from a month's first day to a month's last, or
        to today for a preset that runs to date), else 0."""
        if self.key == "year":
            return 12  # (to date: a year steps to the whole year before)
        if self.start.day != 1:
            return 0
        to_date = self.end == today and self.key in ("month", "year", "6mo", "12mo")
        if not to_date and _add_months(self.end, 1).replace(day=1) - timedelta(days=1) != self.end:
            return 0
        return (self.end.year - self.start.year) * 12 + self.end.month - self.start.month + 1


def _day(day: date, today: date) -> Period:
    if day == today:
        return Period("today", day, day)
    if day == today - timedelta(days=1):
        return Period("yesterday", day, day)
    return Period("custom", day, day)


def _month(first: date, today: date) -> Period:
    if first == month_start(today):
        return Period("month", first, today)
    if first == month_start(month_start(today) - timedelta(days=1)):
        return Period("last_month", first, month_start(today) - timedelta(days=1))
    return Period("custom", first, _next(first) - timedelta(days=1))


def _year(year: int, today: date) -> Period:
    if year == today.year:
        return Period("year", date(year, 1, 1), today)
    return Period("custom", date(year, 1, 1), date(year, 12, 31))


def _next(day: date) -> date:
    """The first day of the month after `day`'s."""
    return _add_months(month_start(day), 1)


def _add_months(day: date, months: int) -> date:
    """The first day of the month `months` after (or before) `day`'s."""
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def parse(params, today: date, first_day: date | None = None) -> Period:
    """The period a request asks for; `first_day` is where "all time" starts (the site's
    first counted day)."""
    key = params.get("period") or DEFAULT
    if key == "realtime":  # (the last 30 minutes: the site page shows the realtime view; other pages, today)
        return Period(key, today, today)
    if key == "all":
        start = max(first_day or today, today - timedelta(days=MAX_DAYS - 1))
        return Period(key, min(start, today), today)
    if key == "year":
        return Period(key, date(today.year, 1, 1), today)
    if key in ("28d", "91d"):
        return Period(key, today - timedelta(days=int(key[:-1]) - 1), today)
    if (key in dict(CHOICES) or key in OLD_KEYS) and key != "custom":
        return Period(key, *named_range(key, today, today))
    if key == "custom":
        try:
            start, end = date.fromisoformat(params.get("from", "")), date.fromisoformat(params.get("to", ""))
        except ValueError:
            return _default(today, "The custom range needs two dates (YYYY-MM-DD); showing the last 30 days.")
        problem = out_of_bounds(start, today) or out_of_bounds(end, today)
        if problem:
            return _default(today, f"A custom range's dates {problem}; showing the last 30 days.")
        if start > end or (end - start).days + 1 > MAX_DAYS:
            return _default(
                today, f"A custom range runs forward and spans at most {MAX_DAYS} days; showing the last 30 days."
            )
        return Period(key, start, end)
    return _default(today, "Unknown period; showing the last 30 days.")


def _default(today: date, error: str) -> Period:
    return Period(DEFAULT, today - timedelta(days=29), today, error)
