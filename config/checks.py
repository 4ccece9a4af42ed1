"""System checks for settings that are dangerous together (`manage.py check --deploy` and
every start): the kind of mistake that leaks data or lets visitors forge their identity."""

from django.conf import settings
from django.core.checks import Warning, register

LOCAL = {"127.0.0.1", "localhost", "[::1]", "testserver"}


@register(deploy=True)
def dangerous_combinations(app_configs, **kwargs):
    problems = []
    if settings.DEBUG and set(settings.ALLOWED_HOSTS) - LOCAL:
        problems.append(
            Warning(
                "DEBUG is on while serving non-local hosts: tracebacks would show settings to the public.",
                id="tally.W001",
            )
        )
    everyone = [n for n in settings.TRUSTED_PROXIES if n.prefixlen == 0]
    if everyone:
        problems.append(
            Warning(
                f"TRUSTED_PROXIES includes {everyone[0]}: "
                "any client could forge X-Forwarded-For and its visitor identity.",
                hint="List only your proxies' addresses.",
                id="tally.W002",
            )
        )
    if "*" in settings.ALLOWED_HOSTS and not settings.SESSION_COOKIE_SECURE:
        problems.append(
            Warning(
                "ALLOWED_HOSTS is '*' and cookies are not secure-only: set SECURE_COOKIES=true behind HTTPS.",
                id="tally.W003",
            )
        )
    return problems
