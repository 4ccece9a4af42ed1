"""System checks warn about dangerous setting combinations."""
import ipaddress

from config.checks import dangerous_combinations


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
