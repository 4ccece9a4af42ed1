"""Calendar helpers: day ranges, ISO weeks (starting Monday), calendar months, and the
days a question may ask about."""
from datetime import date, timedelta

EARLIEST_DAY = date(2000, 1, 1)  # no event is older (ingest refuses earlier timestamps)


def latest_day(today: date) -> date:
    """The last day with possible data: tomorrow, for clocks and time zones ahead of ours."""
    return today + timedelta(days=1)


def out_of_bounds(day: date, today: date) -> str:
    """Why a day cannot be asked about, or "" when it can: ranges are bounded to the data's
    possible life, so no input makes a read loop over centuries."""
    if day < EARLIEST_DAY or day > latest_day(today):
        return f"must be between {EARLIEST_DAY.isoformat()} and {latest_day(today).isoformat()}"
    return ""


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
