"""Number formatting, one way for every page (cards, panels, details tables, the admin's
tables), so the same number reads the same everywhere:

- counts with the active locale's thousands separator: 1234567 -> "1,234,567" in
  English, "1.234.567" in German, "1 234 567" in French (Django's formats);
- cards compact past a million: 1234567 -> "1.23M";
- percentages rounded to one decimal, a whole one without ".0": 37 -> "37%",
  4.6512 -> "4.7%" (Plausible's way);
- durations in the two largest units: 83 -> "1m 23s", 3720 -> "1h 2m", 90000 -> "1d 1h".

"–" stands for a number that does not exist (None), never for zero.
"""

from decimal import ROUND_HALF_UP, Decimal

from django import template
from django.utils import numberformat
from django.utils.formats import get_format

register = template.Library()
MISSING = "–"


def _grouped(value, decimals: int | None = None) -> str:
    """The active locale's way to write a number: its decimal mark and its thousands
    separator, always (Django groups only when USE_THOUSAND_SEPARATOR is on, and not at
    all in the 40-odd locales that name no grouping: those group by three, with their
    separator or else a comma). Rounded half up first: Django's formatting cuts digits off
    (2.456 would read "2.45")."""
    if decimals is not None:
        value = Decimal(str(value)).quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_UP)
    separator, grouping = get_format("THOUSAND_SEPARATOR"), get_format("NUMBER_GROUPING")
    if not separator or not grouping:
        separator, grouping = separator or ",", 3
    return numberformat.format(
        value, get_format("DECIMAL_SEPARATOR"), decimals, grouping, separator, force_grouping=True
    )


@register.filter
def compact(value):
    if value is None:
        return MISSING
    if abs(value) >= 1_000_000:
        return f"{_grouped(value / 1_000_000, 2)}M"
    if isinstance(value, float) and not value.is_integer():
        return _grouped(value, 1)
    return _grouped(int(value))


@register.filter
def thousands(value):
    return MISSING if value is None else _grouped(int(value))


@register.filter
def percentage(value):
    """A number already in percent: 37 -> "37%", 4.6512 -> "4.7%", 100.0 -> "100%"."""
    if value is None:
        return MISSING
    rounded = Decimal(str(value)).quantize(Decimal("0.1"), ROUND_HALF_UP)
    return f"{_grouped(rounded, 0 if rounded == rounded.to_integral_value() else 1)}%"


@register.filter
def percent(value):
    """A share (0 to 1) in percent: 0.1234 -> "12.3%"."""
    return MISSING if value is None else percentage(100 * value)


@register.filter
def change(value):
    """A card's change from the period before, in percent, signed: "+12.5%", "-3%", "0%"."""
    if value is None:
        return MISSING
    shown = percentage(value)
    return shown if shown.startswith("-") or shown == "0%" else f"+{shown}"


@register.filter
def duration(seconds):
    """45 -> "45s", 83 -> "1m 23s", 3720 -> "1h 2m", 90000 -> "1d 1h" (Plausible's visit
    duration; days for the admin's key TTLs)."""
    if seconds is None:
        return MISSING
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60}s"
    if seconds < 86400:
        return f"{seconds // 3600}h {seconds % 3600 // 60}m"
    return f"{_grouped(seconds // 86400)}d {seconds % 86400 // 3600}h"


@register.filter
def metric(value, key):
    """A metric as cards and tables show it, by its name: rates in percent, durations in
    minutes and seconds, views per visit with two decimals, counts with separators."""
    if value is None:
        return MISSING
    if key == "stickiness":
        return percent(value)
    if key in ("bounce_rate", "conversion_rate"):
        return percentage(value)
    if key == "visit_duration":
        return duration(value)
    if key == "views_per_visit":
        return _grouped(value, 2)
    return compact(value)


@register.filter
def get_item(mapping, key):
    """mapping[key] in a template (property rows are keyed by the property's name)."""
    return mapping.get(key)
