"""Calendar helpers: day ranges, ISO weeks (starting Monday), calendar months."""
from datetime import date, timedelta


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
