"""GET /api/v1/stats/*: auth, parameters, and the numbers."""

from datetime import UTC, datetime

import pytest

from team.roles import add_member


def get(client, path, key=None, **params):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    return client.get(f"/api/v1/stats/{path}", params, **headers)


def send(client, key, events):
    response = client.post(
        "/api/v1/events", data=events, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 200


def test_timeseries_has_one_row_per_day_with_zeros(client, make_site):
    _, key = make_site()
    send(client, key, [{"url": "https://example.com/", "visitor": "a", "ts": "2026-11-03T10:00:00Z"}])
    body = get(client, "timeseries", key, site="example.com", **{"from": "2026-11-01", "to": "2026-11-04"}).json()
    assert body["site"] == "example.com"
    assert [r["date"] for r in body["results"]] == ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]
    assert [r["pageviews"] for r in body["results"]] == [0, 0, 1, 0]
    assert body["results"][2] == {"date": "2026-11-03", "visitors": 1, "pageviews": 1, "dau": 1, "new_visitors": 1}


def test_timeseries_defaults_to_the_last_thirty_days(client, make_site):
    _, key = make_site()
    results = get(client, "timeseries", key, site="example.com", metrics="dau").json()["results"]
    assert len(results) == 30
    assert results[-1]["date"] == datetime.now(UTC).date().isoformat()
    assert set(results[0]) == {"date", "dau"}


def test_pages_ranks_by_visitors(client, make_site):
    _, key = make_site()
    events = [{"url": "https://example.com/popular", "visitor": str(n)} for n in range(5)]
    events += [{"url": "https://example.com/reloaded", "visitor": "x"} for _ in range(9)]
    send(client, key, events)
    results = get(client, "pages", key, site="example.com", limit=5).json()["results"]
    assert results == [
        {"page": "/popular", "visitors": 5, "pageviews": 5},
        {"page": "/reloaded", "visitors": 1, "pageviews": 9},
    ]


def test_realtime_counts_recent_visitors(client, make_site):
    _, key = make_site()
    send(client, key, [{"url": "https://example.com/", "visitor": str(n)} for n in range(3)])
    assert get(client, "realtime", key, site="example.com").json() == {
        "site": "example.com",
        "visitors": 3,
        "minutes": 5,
    }


def test_a_key_reads_only_its_own_site(client, make_site):
    _, key = make_site("a.example")
    make_site("b.example")
    response = get(client, "timeseries", key, site="b.example")
    assert response.status_code == 403
    assert "not for site" in response.json()["error"]


def test_staff_sessions_may_read(client, make_site, django_user_model):
    make_site()
    user = django_user_model.objects.create_user("staff", password="pw-12345678", is_staff=True)
    client.force_login(user)
    assert get(client, "timeseries", site="example.com").status_code == 200
    assert get(client, "timeseries", site="missing.example").status_code == 404


def test_anonymous_and_other_users_are_refused_owners_may_read(client, make_site, django_user_model):
    site, _ = make_site()
    assert get(client, "pages", site="example.com").status_code == 401
    user = django_user_model.objects.create_user("plain", password="pw-12345678")
    client.force_login(user)
    assert get(client, "pages", site="example.com").status_code == 404  # not theirs: not even its existence
    add_member(site, user, "owner")
    assert get(client, "pages", site="example.com").status_code == 200


@pytest.mark.parametrize(
    "params, message",
    [
        ({}, "missing parameter: site"),
        ({"site": "example.com", "from": "2026-13-01"}, "from: not a date"),
        ({"site": "example.com", "to": "soon"}, "to: not a date"),
        ({"site": "example.com", "from": "2026-11-05", "to": "2026-11-01"}, "from: must not be after to"),
        ({"site": "example.com", "from": "2020-01-01", "to": "2026-01-01"}, "range too long"),
        ({"site": "example.com", "metrics": "visitors,bounces"}, "metrics: unknown bounces"),
        ({"site": "example.com", "metrics": ","}, "metrics: unknown (none)"),
    ],
)
def test_bad_timeseries_parameters_are_a_400(client, make_site, params, message):
    _, key = make_site()
    response = get(client, "timeseries", key, **params)
    assert response.status_code == 400
    assert message in response.json()["error"]


@pytest.mark.parametrize("limit, message", [("x", "limit: not an integer"), ("0", "limit: must be between")])
def test_bad_pages_limit_is_a_400(client, make_site, limit, message):
    _, key = make_site()
    response = get(client, "pages", key, site="example.com", limit=limit)
    assert response.status_code == 400
    assert message in response.json()["error"]


@pytest.mark.parametrize(
    "params, message",
    [
        ({"from": "0002-01-01"}, "from: must be between 2000-01-01 and "),
        ({"from": "0002-01-01", "to": "0002-12-31"}, "to: must be between 2000-01-01 and "),
        ({"from": "1999-12-31", "to": "2000-01-05"}, "from: must be between 2000-01-01 and "),
        ({"to": "9999-12-31"}, "to: must be between 2000-01-01 and "),
    ],
)
def test_dates_are_bounded_to_the_datas_possible_life(client, make_site, params, message):
    """Issue 10: from=0002-01-01 took 8-10 s to answer."""
    _, key = make_site()
    for path in ("timeseries", "pages", "retention"):
        response = get(client, path, key, site="example.com", **params)
        assert response.status_code == 400 and response.json()["error"].startswith(message), path
