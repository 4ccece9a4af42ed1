"""Number formatting: cards 1234 -> 1,234 and 1234567 -> 1.23M; tables 1234567 ->
1,234,567; 0.1234 -> 12.3%; 83 seconds -> 1m 23s."""

from django import template

register = template.Library()


@register.filter
def compact(value):
    if value is None:
        return "–"
    if abs(value) >= 1_000_000:
        return f"{value / 1_000_000:.2f}M"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


@register.filter
def thousands(value):
    return "–" if value is None else f"{int(value):,}"


@register.filter
def percent(value):
    return "–" if value is None else f"{100 * value:.1f}%"


@register.filter
def duration(seconds):
    """45 -> "45s", 83 -> "1m 23s", 3720 -> "1h 2m" (Plausible's visit duration)."""
    if seconds is None:
        return "–"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60}m"


@register.filter
def metric(value, key):
    """A metric as cards and tables show it, by its name: rates in percent, durations in
    minutes and seconds, views per visit with two decimals, counts with separators."""
    if value is None:
        return "–"
    if key == "stickiness":
        return percent(value)
    if key == "bounce_rate":
        return f"{value:g}%"
    if key == "visit_duration":
        return duration(value)
    if key == "views_per_visit":
        return f"{value:.2f}"
    return compact(value)


@register.filter
def get_item(mapping, key):
    """mapping[key] in a template (property rows are keyed by the property's name)."""
    return mapping.get(key)
