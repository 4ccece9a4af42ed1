"""Rate limits (GCRA in Lua): per client IP and per site at ingest, failed logins."""

import json
import time

import pytest

from analytics.store import keys
from analytics.store.limits import Bucket, Limited, Rate, throttle

pytestmark = pytest.mark.one_leg  # (pages, documents and settings over the runner, which every leg tests on its server)

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36"


def event(client, ip=None, **extra):
    body = {"name": "pageview", "url": "https://example.com/", "domain": "example.com"}
    headers = {"HTTP_X_FORWARDED_FOR": ip} if ip else {}
    return client.post(
        "/api/event", data=json.dumps(body), content_type="text/plain", HTTP_USER_AGENT=CHROME, **headers, **extra
    )


def pageviews(r, site):
    from analytics import queries
    from analytics.sites import SiteInfo

    info = SiteInfo.from_model(site)
    return queries.timeseries(r, info, info.today(), info.today(), ("pageviews",))[0]["pageviews"]


def test_one_client_ip_gets_its_burst_then_429(client, site, settings, r):
    settings.RATE_LIMIT_PER_IP, settings.RATE_LIMIT_PER_IP_BURST = 60, 5
    settings.TRUSTED_PROXIES = settings.TRUSTED_PROXIES + [__import__("ipaddress").ip_network("127.0.0.1/32")]
    answers = [event(client, "203.0.113.7").status_code for _ in range(8)]
    assert answers == [202] * 5 + [429] * 3
    refused = event(client, "203.0.113.7")
    assert refused.json()["error"].startswith("rate limit exceeded; retry in") and int(refused["Retry-After"]) >= 1
    assert event(client, "198.51.100.1").status_code == 202  # another client has its own bucket
    assert pageviews(r, site) == 6  # refused events are not counted
    assert not list(r.scan_iter("*203.0.113.7*"))  # the IP is hashed in the key


def test_a_zero_limit_is_no_limit(client, site, settings, r):
    settings.RATE_LIMIT_PER_IP = 0
    assert all(event(client).status_code == 202 for _ in range(150))
    assert pageviews(r, site) == 150


def test_a_sites_limit_covers_its_batches(client, make_site, r):
    site, key = make_site()
    site.ingest_rate_per_minute = 100
    site.save()
    events = [{"url": "https://example.com/b", "visitor": str(n)} for n in range(150)]
    post = lambda: client.post(
        "/api/v1/events", data=json.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert post().status_code == 200  # a fresh bucket lets one big batch in (and owes for it)
    second = post()
    assert second.status_code == 429 and int(second["Retry-After"]) >= 30
    assert pageviews(r, site) == 150


def test_the_bucket_refills_at_its_rate(r):
    bucket = Bucket("test:{rate}:refill", Rate(per_minute=6000, burst=2))  # one every 10 ms
    throttle(r, [bucket])
    throttle(r, [bucket])
    with pytest.raises(Limited):
        throttle(r, [bucket])
    time.sleep(0.03)
    throttle(r, [bucket])
    assert 0 < r.pttl(bucket.key) <= 30


def test_several_buckets_are_charged_all_or_nothing(r):
    full = Bucket("test:{rate}:full", Rate(per_minute=1, burst=1))
    free = Bucket("test:{rate}:free", Rate(per_minute=1, burst=3))
    throttle(r, [full])
    for _ in range(3):
        with pytest.raises(Limited):
            throttle(r, [full, free])
    throttle(r, [free])
    throttle(r, [free])
    throttle(r, [free])  # the refused calls charged nothing
    with pytest.raises(Limited):
        throttle(r, [free])


def test_failed_logins_are_throttled_per_account(client, django_user_model, settings):
    django_user_model.objects.create_user("ann", password="right-password-1")
    settings.LOGIN_FAILURES_PER_ACCOUNT = 3
    tries = [client.post("/accounts/login/", {"username": "ann", "password": "wrong"}).status_code for _ in range(3)]
    assert tries == [200, 200, 200]  # the form again, with its error
    blocked = client.post("/accounts/login/", {"username": "ann", "password": "right-password-1"})
    assert blocked.status_code == 429 and int(blocked["Retry-After"]) > 60
    assert "Too many failed logins" in blocked.content.decode()
    other = client.post("/accounts/login/", {"username": "bob", "password": "wrong"})
    assert other.status_code == 200  # other accounts are not locked out


def test_nobody_can_lock_someone_elses_account_out(client, django_user_model, settings):
    """The failures of one client do not refuse the account's owner elsewhere: the bucket
    is per (account, client IP); the per-IP ceiling still holds the guesser."""
    django_user_model.objects.create_user("ann", password="right-password-1")
    settings.LOGIN_FAILURES_PER_ACCOUNT = 3
    for _ in range(4):
        client.post("/accounts/login/", {"username": "ann", "password": "wrong"}, REMOTE_ADDR="198.51.100.7")
    guesser = client.post(
        "/accounts/login/", {"username": "ann", "password": "right-password-1"}, REMOTE_ADDR="198.51.100.7"
    )
    assert guesser.status_code == 429
    owner = client.post(
        "/accounts/login/", {"username": "ann", "password": "right-password-1"}, REMOTE_ADDR="203.0.113.9"
    )
    assert owner.status_code == 302  # logged in


def test_failed_logins_are_throttled_per_client_ip(client, settings, db):
    settings.LOGIN_FAILURES_PER_IP = 4
    codes = [client.post("/accounts/login/", {"username": f"user{n}", "password": "x"}).status_code for n in range(5)]
    assert codes == [200, 200, 200, 200, 429]
    assert keys.rate_login("ip", "x").startswith("tally:{login}:")
