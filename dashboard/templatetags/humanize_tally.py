"""Number formatting: cards 1234 -> 1,234 and 1234567 -> 1.23M; tables 1234567 ->
1,234,567; 0.1234 -> 12.3%."""
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
