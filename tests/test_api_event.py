"""POST /api/event: Plausible's Events API."""

import json
from datetime import datetime

import pytest

from analytics import queries
from analytics.sites import SiteInfo
from analytics.store import keys

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def post(client, body, content_type="application/json", ua=CHROME, **extra):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    headers = {"HTTP_USER_AGENT": ua} if ua is not None else {}
    return client.post("/api/event", data=data, content_type=content_type, **headers, **extra)


def today_row(r, site):
    s = SiteInfo.from_model(site)
    day = datetime.now(s.tz).date()
    return queries.timeseries(r, s, day, day)[0]


def pageview(**overrides):
    return {"name": "pageview", "url": "https://example.com/docs/?utm=x#top", "domain": "example.com", **overrides}


def test_it_accepts_a_pageview_as_json(client, site, r):
    response = post(client, pageview(referrer="https://news.ycombinator.com/"))
    assert response.status_code == 202
    assert response.content == b"ok"
    row = today_row(r, site)
    assert (row["pageviews"], row["dau"], row["visitors"], row["new_visitors"]) == (1, 1, 1, 1)
    s = SiteInfo.from_model(site)
    pages = queries.top_pages(r, s, datetime.now(s.tz).date(), datetime.now(s.tz).date())
    assert pages == [{"page": "/docs/", "visitors": 1, "pageviews": 1}]


def test_it_accepts_text_plain_and_the_trackers_short_names(client, site, r):
    body = {"n": "pageview", "u": "https://example.com/a", "d": "example.com", "r": None}
    assert post(client, body, content_type="text/plain").status_code == 202
    assert today_row(r, site)["pageviews"] == 1


def test_the_same_ip_and_agent_is_one_visitor(client, site, r):
    for path in ("/a", "/b", "/c"):
        post(client, pageview(url=f"https://example.com{path}"), REMOTE_ADDR="198.51.100.7")
    post(client, pageview(), REMOTE_ADDR="198.51.100.8")
    row = today_row(r, site)
    assert row["pageviews"] == 4 and row["dau"] == 2


def test_user_id_identifies_across_devices(client, site, r):
    post(client, pageview(user_id="alice"), REMOTE_ADDR="198.51.100.7")
    post(client, pageview(user_id="alice"), REMOTE_ADDR="203.0.113.1", ua="Other/1.0")
    assert today_row(r, site)["dau"] == 1


def test_custom_events_are_counted(client, site, r):
    response = post(client, pageview(name="Signup", props={"plan": "pro"}, revenue={"amount": 9, "currency": "EUR"}))
    assert response.status_code == 202
    s = SiteInfo.from_model(site)
    assert r.get(keys.event_count(site.id, datetime.now(s.tz).date(), "Signup")) == b"1"
    assert today_row(r, site)["pageviews"] == 0


def test_bots_answer_202_with_a_dropped_header_and_are_counted(client, site, r):
    response = post(client, pageview(), ua=GOOGLEBOT)
    assert response.status_code == 202
    assert response["X-Tally-Dropped"] == "bot"
    s = SiteInfo.from_model(site)
    assert int(r.hget(keys.dropped(site.id, datetime.now(s.tz).date()), "user-agent")) == 1
    assert today_row(r, site)["pageviews"] == 0


def test_one_event_can_count_for_several_sites(client, make_site, r):
    a, _ = make_site("a.example")
    b, _ = make_site("b.example")
    assert post(client, pageview(domain="a.example,b.example,unknown.example")).status_code == 202
    assert today_row(r, a)["pageviews"] == today_row(r, b)["pageviews"] == 1


def test_cors_preflight_and_headers(client, site):
    response = client.options("/api/event", HTTP_ORIGIN="https://example.com")
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "Content-Type" in response["Access-Control-Allow-Headers"]
    assert post(client, pageview())["Access-Control-Allow-Origin"] == "*"


def test_it_needs_no_csrf_token(site):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    assert post(strict, pageview()).status_code == 202


def test_forwarded_for_is_ignored_unless_the_proxy_is_trusted(client, site, r, settings):
    post(client, pageview(), HTTP_X_FORWARDED_FOR="1.1.1.1")
    post(client, pageview(), HTTP_X_FORWARDED_FOR="2.2.2.2")
    assert today_row(r, site)["dau"] == 1  # both are 127.0.0.1: the header was not believed

    import ipaddress

    settings.TRUSTED_PROXIES = [ipaddress.ip_network("127.0.0.0/8")]
    post(client, pageview(), HTTP_X_FORWARDED_FOR="3.3.3.3")
    post(client, pageview(), HTTP_X_FORWARDED_FOR="9.9.9.9, 4.4.4.4")  # spoofed left hop ignored
    post(client, pageview(), HTTP_X_FORWARDED_FOR="8.8.8.8, 4.4.4.4")
    assert today_row(r, site)["dau"] == 3


@pytest.mark.parametrize(
    "body, status, message",
    [
        ("{not json", 400, "Invalid JSON"),
        ("[1, 2]", 400, "Input should be an object"),
        (json.dumps({"name": "pageview", "domain": "example.com"}), 400, "url: Field required"),
        (json.dumps(pageview(url=42)), 400, "url: Input should be a valid string"),
        (json.dumps(pageview(url="ftp://example.com/x")), 400, "absolute http(s) URL"),
        (json.dumps(pageview(url="/relative/path")), 400, "absolute http(s) URL"),
        (json.dumps(pageview(url="http://[::1")), 400, "url"),
        (json.dumps(pageview(name="")), 400, "name: String should have at least 1 character"),
        (json.dumps(pageview(interactive="yes")), 400, "interactive"),
        (json.dumps(pageview(domain="nope.example")), 400, "unknown domain"),
        (json.dumps(pageview(url="https://example.com/" + "x" * 3000)), 400, "url: String should have at most"),
        ("", 400, "empty body"),
    ],
)
def test_bad_input_is_a_clear_4xx(client, site, r, body, status, message):
    response = post(client, body)
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert message in response.json()["error"]
    assert today_row(r, site)["pageviews"] == 0


def test_an_oversized_body_is_refused(client, site):
    response = post(client, json.dumps(pageview(props={"x": "y" * 70_000})))
    assert response.status_code == 413
    assert "body too large" in response.json()["error"]


def test_a_missing_user_agent_is_refused(client, site):
    response = post(client, pageview(), ua=None)
    assert response.status_code == 400
    assert response.json() == {"error": "missing User-Agent header"}


@pytest.mark.single_server
def test_a_storage_outage_keeps_events_in_the_spool(client, site, settings, tmp_path, r, redis_server):
    from analytics.capture import spool
    from analytics.store import connection

    settings.VAR_DIR = tmp_path
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    connection.reset()
    response = post(client, pageview(url="https://example.com/while-down"))
    assert response.status_code == 202 and response["X-Tally-Spooled"] == "1"
    batch = client.post(
        "/api/v1/events",
        data=json.dumps([{"url": "https://example.com/b", "visitor": str(n)} for n in range(5)]),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {site.create_api_key()}",
    )
    assert batch.json()["accepted"] == 5 and batch["X-Tally-Spooled"] == "5"
    assert len(list((tmp_path / "spool").glob("*.ndjson"))) == 1

    settings.REDIS_URL = redis_server.url  # Redis is back
    connection.reset()
    assert today_row(r, site)["pageviews"] == 0
    assert spool.replay(connection.get_redis()) == 6
    row = today_row(r, site)
    assert (row["pageviews"], row["dau"]) == (6, 6)
    assert list((tmp_path / "spool").iterdir()) == []
    assert spool.replay(connection.get_redis()) == 0  # nothing twice


@pytest.mark.single_server
def test_rate_limits_hold_while_redis_is_out(client, site, settings, tmp_path):
    """Per-IP limits kept counting in memory during an outage: one client's 1,000 events
    were all spooled where the limit allows ~146; now past its burst it gets 429s."""
    from analytics.store import connection

    settings.VAR_DIR = tmp_path
    settings.RATE_LIMIT_PER_IP, settings.RATE_LIMIT_PER_IP_BURST = 60, 3
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    connection.reset()
    codes = [post(client, pageview(url=f"https://example.com/{n}")).status_code for n in range(8)]
    assert codes[:4] == [202] * 4 and set(codes[4:]) == {429}, (
        codes
    )  # (the first finds the outage; three more in the burst)
    other = post(client, pageview(), REMOTE_ADDR="203.0.113.5")
    assert other.status_code == 202  # (another client has its own bucket)


@pytest.mark.single_server
def test_a_full_spool_refuses_with_503_and_never_drops_what_it_accepted(
    client, site, settings, tmp_path, r, redis_server
):
    from analytics.capture import spool
    from analytics.store import connection

    settings.VAR_DIR = tmp_path
    settings.SPOOL_MAX_BYTES_PER_SITE = 3000
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    connection.reset()
    key = site.create_api_key()
    accepted, refused = 0, 0
    for n in range(10):
        batch = client.post(
            "/api/v1/events",
            data=json.dumps([{"url": f"https://example.com/{n}", "visitor": f"v{n}"}] * 2),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        if batch.status_code == 200:
            accepted += batch.json()["accepted"]
        else:
            assert batch.status_code == 503 and batch["Retry-After"] and "storage" in batch.json()["error"]
            refused += 2
    assert accepted and refused and accepted + refused == 20
    settings.REDIS_URL = redis_server.url
    connection.reset()
    assert spool.replay(connection.get_redis()) == accepted  # every accepted event is counted


@pytest.mark.single_server
def test_no_spool_either_is_a_503_not_a_500(client, site, settings, tmp_path):
    from analytics.store import connection

    (tmp_path / "spool").write_text("a file where the spool folder should be")
    settings.VAR_DIR = tmp_path
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    connection.reset()
    response = post(client, pageview())
    assert response.status_code == 503
    assert response["Retry-After"]
    assert "storage" in response.json()["error"]


def test_wrong_methods_and_paths_get_json(client, site):
    response = client.get("/api/event")
    assert response.status_code == 405
    assert response["Allow"] == "POST, OPTIONS"
    assert "method GET not allowed" in response.json()["error"]
    assert client.get("/api/v1/events").status_code == 405
    assert client.post("/api/v1/stats/pages").json()["error"].startswith("method POST not allowed")
    response = client.get("/api/v2/nothing")
    assert response.status_code == 404
    assert response.json() == {"error": "no such endpoint: /api/v2/nothing"}


def test_a_domain_listed_many_times_counts_once(client, make_site, r):
    site, _ = make_site()
    other, _ = make_site("other.org")
    response = post(client, pageview(domain=",".join(["example.com", "EXAMPLE.com "] * 38 + ["other.org"])))
    assert response.status_code == 202
    assert today_row(r, site)["pageviews"] == 1 and today_row(r, other)["pageviews"] == 1


def test_a_path_over_1024_bytes_is_cut(client, site, r):
    long_path = "/" + "a" * 1900  # (URLs are at most 2,048 characters)
    assert post(client, pageview(url=f"https://example.com{long_path}")).status_code == 202
    from analytics.store import keys

    day = SiteInfo.from_model(site).today()
    assert [p.decode() for p in r.smembers(keys.pages_index(site.pk, day))] == [long_path[:1024]]
