"""The dedup API: seen, unseen, recommendations from ingested pageviews, bad input."""

import json

import pytest


def post(client, key, path, body):
    data = body if isinstance(body, str) else json.dumps(body)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    return client.post(f"/api/v1/{path}", data=data, content_type="application/json", **headers)


def test_seen_then_unseen(client, make_site):
    _, key = make_site()
    response = post(client, key, "seen", {"user": "u1", "items": ["a", "b", "a"]})
    assert response.status_code == 200
    assert response.json() == {"added": [True, True, False]}
    assert post(client, key, "seen", {"user": "u1", "items": ["b", "c"]}).json() == {"added": [False, True]}
    body = post(client, key, "unseen", {"user": "u1", "items": ["d", "a", "e", "c", "f"]}).json()
    assert body == {"items": ["d", "e", "f"]}
    assert post(client, key, "unseen", {"user": "someone-else", "items": ["a"]}).json() == {"items": ["a"]}


def test_recommendations_skip_pages_the_user_viewed(client, make_site):
    _, key = make_site()
    events = [{"url": f"https://example.com/p{n % 6}", "visitor": f"v{n}"} for n in range(60)]
    # p5 most seen, by n distinct visitors more on p<n> (one visitor n times made p3 and p5
    # tie once ann's views were added: 12 each, and an HLL estimate could break the tie)
    events += [{"url": f"https://example.com/p{n}", "visitor": f"w{n}-{k}"} for n in range(6) for k in range(n)]
    events += [{"url": "https://example.com/p5", "user_id": "ann"}, {"url": "https://example.com/p3", "user_id": "ann"}]
    assert client.post(
        "/api/v1/events", data=json.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    ).json()["accepted"] == len(events)
    everyone = client.get(
        "/api/v1/recommendations",
        {"site": "example.com", "user": "nobody", "limit": 6},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()
    assert [p["page"] for p in everyone["pages"]][:1] == ["/p5"]
    ann = client.get(
        "/api/v1/recommendations",
        {"site": "example.com", "user": "ann", "limit": 6},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()
    assert [p["page"] for p in ann["pages"]] == [
        p["page"] for p in everyone["pages"] if p["page"] not in ("/p5", "/p3")
    ]
    assert ann["user"] == "ann"


def test_recommendations_never_offer_the_pages_past_the_quota_as_a_page(client, make_site):
    site, key = make_site()
    site.max_pages_per_day = 2
    site.save()
    events = [{"url": f"https://example.com/p{n}", "visitor": f"v{n}-{k}"} for n in range(8) for k in range(3)]
    assert client.post(
        "/api/v1/events", data=json.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    ).json()["accepted"] == len(events)
    pages = client.get(
        "/api/v1/recommendations",
        {"site": "example.com", "user": "nobody", "limit": 6},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()["pages"]
    assert pages and "(other)" not in [p["page"] for p in pages]


def test_an_anonymous_event_never_writes_a_named_users_filter(client, make_site, r):
    """Issue 10: anyone could post `user_id=victim` and empty the victim's recommendations.
    Only Bearer-key calls mark items seen; the user_id still identifies the visitor."""
    site, key = make_site()
    assert post(client, key, "seen", {"user": "bo", "items": ["/known"]}).status_code == 200
    for n in range(20):
        body = {"name": "pageview", "url": f"https://example.com/read{n}", "domain": "example.com", "user_id": "bo"}
        assert (
            client.post(
                "/api/event",
                data=json.dumps(body),
                content_type="text/plain",
                HTTP_USER_AGENT="Mozilla/5.0 Firefox/128.0",
            ).status_code
            == 202
        )
    items = [f"/read{n}" for n in range(20)] + ["/known"]
    assert post(client, key, "unseen", {"user": "bo", "items": items}).json() == {"items": items[:-1]}
    today = client.get(
        "/api/v1/stats/timeseries",
        {"site": "example.com", "from": _today(site), "to": _today(site)},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()
    assert today["results"][0]["visitors"] == 1 and today["results"][0]["pageviews"] == 20  # one person, by user_id


def _today(site):
    from analytics.sites import SiteInfo

    return SiteInfo.from_model(site).today().isoformat()


def test_a_full_nonscaling_filter_is_a_409(client, make_site):
    site, key = make_site()
    site.bloom_capacity, site.bloom_nonscaling = 3, True
    site.save()
    assert post(client, key, "seen", {"user": "u", "items": ["a", "b", "c"]}).status_code == 200
    response = post(client, key, "seen", {"user": "u", "items": ["d"]})
    assert response.status_code == 409
    assert "does not scale" in response.json()["error"]


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"user": "", "items": ["a"]}, 400, "user: String should have at least 1 character"),
        ({"user": "   ", "items": ["a"]}, 400, "user: must not be blank"),
        ({"user": "u", "items": []}, 400, "items: List should have at least 1 item"),
        ({"user": "u", "items": ["a", 5]}, 400, "items.1: Input should be a valid string"),
        ({"user": "u", "items": "a"}, 400, "items: Input should be a valid array"),
        ({"user": "u"}, 400, "items: Field required"),
        ({"user": "u", "items": ["a"], "extra": 1}, 400, "extra: Extra inputs are not permitted"),
        ({"user": "u", "items": ["x"] * 10_001}, 413, "items: List should have at most 10000 items"),
        ("{nope", 400, "Invalid JSON"),
    ],
)
def test_bad_input_is_a_clear_4xx(client, make_site, body, status, message):
    _, key = make_site()
    response = post(client, key, "seen", body)
    assert response.status_code == status
    assert message in response.json()["error"]


def test_keys_and_sites_are_checked(client, make_site):
    _, key = make_site()
    assert post(client, None, "unseen", {"user": "u", "items": ["a"]}).status_code == 401
    assert post(client, "tly_wrong", "seen", {"user": "u", "items": ["a"]}).status_code == 401
    response = client.get(
        "/api/v1/recommendations", {"site": "other.example", "user": "u"}, HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 403
    response = client.get("/api/v1/recommendations", {"site": "example.com"}, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 400 and "user" in response.json()["error"]


def test_filter_settings_past_the_size_limit_answer_409_and_allocate_nothing(client, make_site, r):
    """Settings saved before the model refused them: no request may make Redis allocate a
    filter past the limit (the seen API says why; ingest still counts the pageview)."""
    from analytics import sites
    from analytics.models import Site

    site, key = make_site()
    Site.objects.filter(pk=site.pk).update(bloom_capacity=20_000_000, bloom_error_rate=0.01)  # a 26 MB first sub-filter
    sites.clear_cache()
    response = post(client, key, "seen", {"user": "u1", "items": ["a"]})
    assert response.status_code == 409 and "16 MB" in response.json()["error"]
    assert post(client, key, "unseen", {"user": "u1", "items": ["a"]}).json() == {"items": ["a"]}
    events = [{"url": "https://example.com/p", "user_id": "u1"}]
    assert post(client, key, "events", events).json()["accepted"] == 1
    assert list(r.scan_iter(match="*bloom*")) == []
