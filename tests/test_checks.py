"""System checks warn about dangerous setting combinations."""

import ipaddress

import pytest

from config.checks import dangerous_combinations

pytestmark = pytest.mark.one_leg  # (pages, documents and settings over the runner, which every leg tests on its server)


def ids(settings):
    return {w.id for w in dangerous_combinations(None)}


def test_safe_defaults_raise_nothing(settings):
    assert ids(settings) == set()


def test_dangerous_combinations_warn(settings):
    settings.DEBUG = True
    settings.ALLOWED_HOSTS = ["tally.example.net"]
    settings.TRUSTED_PROXIES = [ipaddress.ip_network("0.0.0.0/0")]
    assert ids(settings) == {"tally.W001", "tally.W002"}
    settings.ALLOWED_HOSTS = ["*"]
    settings.SESSION_COOKIE_SECURE = False
    assert "tally.W003" in ids(settings)


def test_production_settings_pass_check_deploy(tmp_path):
    """With HTTPS on (SECURE_COOKIES), a real host and a real secret: HSTS, redirects and
    secure cookies follow, and `manage.py check --deploy` finds nothing."""
    import os
    import secrets
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    env.update(
        SECURE_COOKIES="true",
        ALLOWED_HOSTS="tally.example.net",
        SECRET_KEY=secrets.token_urlsafe(50),
        TALLY_VAR_DIR=str(tmp_path),
        TRUSTED_PROXIES="10.0.0.5",
    )
    base = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"], cwd=base, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0 and "System check identified no issues" in out.stdout, out.stdout + out.stderr


def test_x_forwarded_proto_is_believed_only_from_a_trusted_proxy(client, settings):
    settings.TRUSTED_PROXIES = [ipaddress.ip_network("10.0.0.5/32")]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    forged = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https", REMOTE_ADDR="203.0.113.9")
    assert forged.status_code == 301 and forged["Location"].startswith("https://")  # not believed: sent to HTTPS
    proxied = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https", REMOTE_ADDR="10.0.0.5")
    assert proxied.status_code == 200
