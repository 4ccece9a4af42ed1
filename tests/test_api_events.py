"""POST /api/v1/events: server-side batches with Bearer keys and partial acceptance."""

import json
import random
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

import pytest

from tests.hll import hll_tolerance

GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


@pytest.fixture
def keyed(make_site):
    return make_site()


def post(client, key, events, ndjson=False, query=""):
    if isinstance(events, (str, bytes)):
        body = events
    elif ndjson:
        body = "\n".join(json.dumps(e) for e in events) + "\n"
    else:
        body = json.dumps(events)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    return client.post(f"/api/v1/events{query}", data=body, content_type="application/json", **headers)


def series(client, key, start, end, metrics="visitors,pageviews,dau,new_visitors"):
    response = client.get(
        "/api/v1/stats/timeseries",
        {"site": "example.com", "from": start, "to": end, "metrics": metrics},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_a_backfill_batch_gives_exact_numbers_over_http(client, keyed):
    site, key = keyed
    rng = random.Random(11)
    events, active, views, first = [], defaultdict(set), defaultdict(int), {}
    for _ in range(3000):
        day = date(2026, 10, 1) + timedelta(days=rng.randrange(7))
        v = rng.randrange(500)
        ts = datetime(day.year, day.month, day.day, rng.randrange(24), rng.randrange(60), tzinfo=UTC)
        events.append({"url": f"https://example.com/p{rng.randrange(9)}", "ts": ts.isoformat(), "visitor": f"v{v}"})
    events.sort(key=lambda e: e["ts"])
    for e in events:
        day = datetime.fromisoformat(e["ts"]).date()
        active[day].add(e["visitor"])
        views[day] += 1
        first.setdefault(e["visitor"], day)
    response = post(client, key, events)
    assert response.status_code == 200
    assert response.json() == {"accepted": 3000, "bots_dropped": 0, "rejected": []}
    rows = series(client, key, "2026-10-01", "2026-10-08")
    for row in rows:
        day = date.fromisoformat(row["date"])
        assert row["dau"] == len(active[day])
        assert row["pageviews"] == views[day]
        assert row["new_visitors"] == sum(1 for d in first.values() if d == day)
        assert abs(row["visitors"] - len(active[day])) <= hll_tolerance(len(active[day]))


def test_ndjson_is_accepted(client, keyed):
    _, key = keyed
    events = [{"url": "https://example.com/", "visitor": str(n)} for n in range(5)]
    response = post(client, key, events, ndjson=True)
    assert response.json()["accepted"] == 5


def test_good_events_are_kept_beside_bad_ones(client, keyed, r):
    site, key = keyed
    now = datetime.now(UTC)
    events = [
        {"url": "https://example.com/ok1", "visitor": "a"},
        {"url": "not a url", "visitor": "b"},
        {"visitor": "c"},
        {"url": "https://example.com/ok2", "visitor": "d", "ts": "yesterday"},
        {"url": "https://example.com/ok3", "visitor": "e", "ts": (now + timedelta(days=2)).isoformat()},
        {"url": "https://example.com/ok4", "visitor": "f", "ts": "1999-12-31T23:00:00Z"},
        {"url": "https://example.com/ok5"},
        {"url": "https://example.com/ok6", "visitor": 17},
        "just a string",
        {"url": "https://example.com/ok7", "user_id": "g", "ts": now.isoformat()},
    ]
    response = post(client, key, events)
    assert response.status_code == 200
    body = response.json()
    assert body["accepted"] == 2
    reasons = {item["index"]: item["error"] for item in body["rejected"]}
    assert sorted(reasons) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert "absolute http(s) URL" in reasons[1]
    assert "url: Field required" in reasons[2]
    assert reasons[3].startswith("ts:")
    assert reasons[4] == "ts: in the future"
    assert reasons[5] == "ts: before 2000-01-01"
    assert "no identity" in reasons[6]
    assert "visitor" in reasons[7]
    today = now.date().isoformat()
    (row,) = series(client, key, today, today)
    assert row["pageviews"] == 2 and row["dau"] == 2


def test_an_ip_that_is_no_address_and_a_width_that_is_no_number_are_rejected_alone(client, keyed):
    _, key = keyed
    events = [
        {"url": "https://example.com/", "ip": "999.1.1.1", "user_agent": "x"},
        {"url": "https://example.com/", "visitor": "a", "screen_width": True},
        {"url": "https://example.com/", "ip": "2001:db8::1", "user_agent": "x", "screen_width": 390},
    ]
    answer = post(client, key, json.dumps(events)).json()
    assert answer["accepted"] == 1
    assert [(item["index"], item["error"].split(":")[0]) for item in answer["rejected"]] == [
        (0, "ip"),
        (1, "screen_width"),
    ]


def test_bad_ndjson_lines_are_rejected_alone(client, keyed):
    _, key = keyed
    body = '{"url": "https://example.com/", "visitor": "a"}\n{oops\n\n{"url": "https://example.com/", "visitor": "b"}\n'
    body_json = post(client, key, body).json()
    assert body_json["accepted"] == 2
    assert [item["index"] for item in body_json["rejected"]] == [1]
    assert "Invalid JSON" in body_json["rejected"][0]["error"]


def test_bots_are_dropped_unless_kept(client, keyed):
    _, key = keyed
    events = [
        {"url": "https://example.com/", "ip": "192.0.2.1", "user_agent": GOOGLEBOT},
        {"url": "https://example.com/", "ip": "192.0.2.2", "user_agent": "Mozilla/5.0 (Windows NT 10.0) Firefox/120.0"},
    ]
    assert post(client, key, events).json() == {"accepted": 1, "bots_dropped": 1, "rejected": []}
    assert post(client, key, events, query="?bots=keep").json() == {"accepted": 2, "bots_dropped": 0, "rejected": []}


def test_offsets_and_naive_timestamps(client, make_site):
    site, key = make_site("example.com", timezone="Europe/Berlin")
    events = [
        {
            "url": "https://example.com/",
            "visitor": "a",
            "ts": "2026-11-01T23:30:00+00:00",
        },  # 00:30 on the 2nd in Berlin
        {"url": "https://example.com/", "visitor": "b", "ts": "2026-11-01T12:00:00"},  # naive: UTC
    ]
    assert post(client, key, events).json()["accepted"] == 2
    rows = series(client, key, "2026-11-01", "2026-11-02", "dau")
    assert [row["dau"] for row in rows] == [1, 1]


@pytest.mark.parametrize(
    "auth, status, message",
    [(None, 401, "missing API key"), ("tly_wrong", 401, "invalid API key")],
)
def test_it_needs_a_valid_key(client, keyed, auth, status, message):
    response = post(client, auth, [{"url": "https://example.com/", "visitor": "a"}])
    assert response.status_code == status
    assert message in response.json()["error"]
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "body, message",
    [
        ("{broken", "Invalid JSON"),
        ('[{"url": "https://example.com/", "visitor": "a"},', "malformed JSON"),
        ('"a string"', "JSON array of events or NDJSON"),
        ("42", "JSON array of events or NDJSON"),
        ("   ", "empty body"),
    ],
)
def test_unreadable_bodies_are_a_400(client, keyed, body, message):
    _, key = keyed
    response = post(client, key, body)
    if response.status_code == 200:  # NDJSON with one broken line: a per-event rejection
        assert message in response.json()["rejected"][0]["error"]
    else:
        assert response.status_code == 400
        assert message in response.json()["error"]


def test_too_many_events_is_a_413(client, keyed, settings):
    _, key = keyed
    settings.MAX_BATCH_EVENTS = 10
    events = [{"url": "https://example.com/", "visitor": str(n)} for n in range(11)]
    response = post(client, key, events)
    assert response.status_code == 413
    assert "too many events: 11" in response.json()["error"]
    assert post(client, key, events, ndjson=True).status_code == 413


def test_ten_thousand_events_in_one_batch(client, keyed):
    _, key = keyed
    events = [{"url": f"https://example.com/{n % 50}", "visitor": str(n)} for n in range(10_000)]
    assert post(client, key, events).json()["accepted"] == 10_000
    today = datetime.now(UTC).date().isoformat()
    (row,) = series(client, key, today, today, "dau,new_visitors,pageviews")
    assert row == {"date": today, "dau": 10_000, "new_visitors": 10_000, "pageviews": 10_000}


def test_a_body_over_the_limit_is_a_413(client, keyed, settings):
    _, key = keyed
    settings.MAX_BATCH_BODY = 1000
    events = [{"url": "https://example.com/", "visitor": str(n)} for n in range(100)]
    response = post(client, key, events)
    assert response.status_code == 413
    assert "body too large" in response.json()["error"]


def test_timestamps_at_the_calendars_edges_are_rejected_alone(client, keyed):
    """Issue 10: these overflowed in the UTC conversion and answered 500."""
    _, key = keyed
    events = [
        {"url": "https://example.com/a", "visitor": "1", "ts": "9999-12-31T23:59:59-14:00"},
        {"url": "https://example.com/b", "visitor": "2"},
        {"url": "https://example.com/c", "visitor": "3", "ts": "0001-01-01T00:00:00+14:00"},
        {"url": "https://example.com/d", "visitor": "4", "ts": "0001-01-01T00:00:00"},
    ]
    response = post(client, key, events)
    assert response.status_code == 200
    body = response.json()
    assert body["accepted"] == 1
    assert [(r["index"], r["error"]) for r in body["rejected"]] == [
        (0, "ts: out of range"),
        (2, "ts: out of range"),
        (3, "ts: before 2000-01-01"),
    ]


def test_gzip_bodies_are_inflated_within_the_limit(client, keyed, settings):
    import gzip

    _, key = keyed
    events = [{"url": "https://example.com/g", "visitor": str(n)} for n in range(200)]

    def send(body, encoding="gzip"):
        return client.post(
            "/api/v1/events",
            data=body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
            HTTP_CONTENT_ENCODING=encoding,
        )

    assert send(gzip.compress(json.dumps(events).encode())).json()["accepted"] == 200
    assert send(b"not gzip at all").status_code == 400
    assert (
        send(gzip.compress(json.dumps(events).encode())[:-12]).json()["error"]
        == "Content-Encoding gzip: the gzip data is cut short"
    )
    settings.MAX_BATCH_BODY = 100_000
    bomb = gzip.compress(b"[" + b" " * 10_000_000 + b"]")  # ~10 KB that inflate to 10 MB
    response = send(bomb)
    assert response.status_code == 413 and "once inflated" in response.json()["error"]
    assert send(json.dumps(events).encode(), "br").status_code == 415


def test_a_chunked_body_from_a_wsgi_server_is_read(keyed, rf):
    """gunicorn de-chunks a chunked body and says so with wsgi.input_terminated, with no
    Content-Length: the body must still be read (it was "empty body" before)."""
    import io

    from analytics.api.ingest import events as view

    _, key = keyed
    body = json.dumps([{"url": "https://example.com/c", "visitor": "1"}]).encode()
    request = rf.post("/api/v1/events", data=b"", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    request.META.pop("CONTENT_LENGTH", None)
    request.META["HTTP_TRANSFER_ENCODING"] = "chunked"
    request.META["wsgi.input_terminated"] = True
    request.META["wsgi.input"] = io.BytesIO(body)
    response = view(request)
    assert response.status_code == 200 and json.loads(response.content)["accepted"] == 1


@pytest.mark.parametrize(
    "sent, page",
    [
        ("/%C3%BCber", "/über"),
        ("/über", "/über"),
        ("/caf%c3%a9/men%C3%BC", "/café/menü"),
        ("/a%20b", "/a b"),
        ("/a%2Fb%3Fc%23d%25e", "/a%2Fb%3Fc%23d%25e"),  # (they would change what the path says)
        ("/bad%ff%fe", "/bad%FF%FE"),  # (no UTF-8: left escaped)
        ("/line%0Abreak", "/line%0Abreak"),
    ],
)
def test_a_path_is_counted_as_people_read_it(sent, page):
    from analytics.ingest.schemas import page_path

    assert page_path(f"https://example.com{sent}") == page


def test_an_escaped_and_a_plain_path_are_one_page(client, keyed):
    _, key = keyed
    assert (
        post(
            client,
            key,
            [
                {"url": "https://example.com/%C3%BCber", "visitor": "a"},
                {"url": "https://example.com/über", "visitor": "b"},
            ],
        ).json()["accepted"]
        == 2
    )
    pages = client.get("/api/v1/stats/pages", {"site": "example.com"}, HTTP_AUTHORIZATION=f"Bearer {key}").json()[
        "results"
    ]
    assert [(p["page"], p["visitors"]) for p in pages] == [("/über", 2)]
