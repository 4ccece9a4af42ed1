"""Calendar helpers: day ranges, ISO weeks (starting Monday), calendar months, and the
days a question may ask about."""

from datetime import UTC, date, datetime, time, timedelta

EARLIEST_DAY = date(2000, 1, 1)  # no event is older (ingest refuses earlier timestamps)


def day_number(day: date) -> int:
    """Days since EARLIEST_DAY: how the ingest script and the first-day runs name a day."""
    return (day - EARLIEST_DAY).days


def policy_expiry(day: date, keep_days: int) -> datetime:
    """When a key expiry policy keeping a family `keep_days` lets a day's keys of it go:
    the start (UTC) of the day `keep_days` + 1 days after it (analytics.rollups.expiry)."""
    return datetime.combine(day + timedelta(days=keep_days + 1), time(), tzinfo=UTC)


def latest_day(today: date) -> date:
    """The last day with possible data: tomorrow, for clocks and time zones ahead of ours."""
    return today + timedelta(days=1)


def out_of_bounds(day: date, today: date) -> str:
    """Why a day cannot be asked about, or "" when it can: ranges are bounded to the data's
    possible life, so no input makes a read loop over centuries."""
    if day < EARLIEST_DAY or day > latest_day(today):
        return f"must be between {EARLIEST_DAY.isoformat()} and {latest_day(today).isoformat()}"
    return ""


# Named periods: the dashboard's picker, and the read API's `period` (Plausible's Stats
# API v1 names: day, 7d, 30d, month, 6mo, 12mo, custom; and Tally's own).
NAMED_PERIODS = ("today", "yesterday", "day", "7d", "30d", "90d", "month", "last_month", "6mo", "12mo")


def named_range(name: str, anchor: date, today: date) -> tuple[date, date]:
    """The days a named period covers, ending on or around `anchor` (today unless a
    request names a date): "day" the anchor itself; "7d", "30d", "90d" the days up to
    the anchor, it included; "month" the anchor's calendar month, "6mo" and "12mo" that
    many calendar months up to the anchor's (never past today: days to come have nothing);
    "last_month" the month before the anchor's. "today" and "yesterday" ignore the anchor.
    ValueError for a name that is none of NAMED_PERIODS."""
    if name == "today":
        return today, today
    if name == "yesterday":
        return today - timedelta(days=1), today - timedelta(days=1)
    if name == "day":
        return anchor, anchor
    if name in ("7d", "30d", "90d"):
        return anchor - timedelta(days=int(name[:-1]) - 1), anchor
    if name == "last_month":
        end = month_start(anchor) - timedelta(days=1)
        return month_start(end), end
    if name in ("month", "6mo", "12mo"):
        months = 1 if name == "month" else int(name[:-2])
        first = month_start(anchor)
        for _ in range(months - 1):
            first = month_start(first - timedelta(days=1))
        last = (month_start(anchor) + timedelta(days=31)).replace(day=1) - timedelta(days=1)
        return first, max(min(last, today), first)
    raise ValueError(f"unknown period {name!r}; choose from {', '.join(NAMED_PERIODS)} or custom")


def days_between(start: date, end: date) -> list[date]:
    """Every day from start to end, both included."""
    return [start + timedelta(days=n) for n in range((end - start).days + 1)]


def monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def month_start(day: date) -> date:
    return day.replace(day=1)


def month_days(first: date) -> list[date]:
    following = (first.replace(day=28) + timedelta(days=4)).replace(day=1)
    return days_between(first, following - timedelta(days=1))


def period_start(unit: str, day: date) -> date:
    return monday(day) if unit == "week" else month_start(day)


def period_days(unit: str, start: date) -> list[date]:
    return [start + timedelta(days=n) for n in range(7)] if unit == "week" else month_days(start)
