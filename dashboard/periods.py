"""The period picker: `?period=30d` (or today, yesterday, 7d, 90d, month, last_month) and
`?period=custom&from=YYYY-MM-DD&to=YYYY-MM-DD`, in the site's time zone."""

from dataclasses import dataclass
from datetime import date, timedelta

from analytics.periods import named_range, out_of_bounds

CHOICES = [
    ("today", "Today"),
    ("yesterday", "Yesterday"),
    ("7d", "Last 7 days"),
    ("30d", "Last 30 days"),
    ("90d", "Last 90 days"),
    ("month", "This month"),
    ("last_month", "Last month"),
    ("custom", "Custom range"),
]
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
        return dict(CHOICES)[self.key]

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


def parse(params, today: date) -> Period:
    key = params.get("period") or DEFAULT
    if key in dict(CHOICES) and key != "custom":
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
