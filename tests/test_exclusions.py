"""A site's exclusions (issue 37, item 4): events from an excluded address or network
(IPv4 and IPv6), on an excluded path pattern or host, are not counted and say so; the
others beside them are; the settings page and `manage.py exclude` make them."""

import io
import json

import pytest
from django.core.management import call_command

from analytics.models import ApiKey, Exclusion
from team.roles import add_member
from tests.test_api_event import post, today_row

pytestmark = pytest.mark.one_leg  # (checked in Python at the edge: the same on every server)


def view(url, domain="example.com"):
    return {"name": "pageview", "url": url, "domain": domain}


@pytest.fixture
def excluding(site):
    for kind, value in (
        ("ip", "203.0.113.0/24"),
        ("ip", "2001:db8::/32"),
        ("path", "/admin/**"),
        ("host", "staging.example.com"),
    ):
        Exclusion.objects.create(site=site, kind=kind, value=value)
    return site


@pytest.mark.parametrize(
    "url, ip, dropped",
    [
        ("https://example.com/", "203.0.113.7", True),
        ("https://example.com/", "2001:db8:5::1", True),
        ("https://example.com/admin/users/4", "198.51.100.7", True),
        ("https://staging.example.com/", "198.51.100.7", True),
        ("https://www.staging.example.com/x", "198.51.100.7", True),
        ("https://example.com/", "198.51.100.7", False),
        ("https://example.com/administration", "198.51.100.7", False),
        ("https://example.com/", "2001:db9::1", False),
    ],
)
def test_an_excluded_event_is_not_counted_and_says_so(client, excluding, r, url, ip, dropped):
    answer = post(client, view(url), REMOTE_ADDR=ip)
    assert answer.status_code == 202
    assert answer.get("X-Tally-Dropped") == ("exclusion" if dropped else None)
    assert today_row(r, excluding)["pageviews"] == (0 if dropped else 1)


def test_a_batch_counts_the_rest_and_names_how_many_were_excluded(client, excluding, r):
    key = ApiKey.create(excluding)
    events = [
        {"url": "https://example.com/a", "visitor": "v1", "ip": "198.51.100.7"},
        {"url": "https://example.com/admin/x", "visitor": "v2"},
        {"url": "https://example.com/b", "visitor": "v3", "ip": "203.0.113.9"},
        {"url": "https://staging.example.com/b", "visitor": "v4"},
    ]
    answer = client.post(
        "/api/v1/events", data=json.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    ).json()
    assert (answer["accepted"], answer["excluded"], answer["rejected"]) == (1, 3, [])
    assert today_row(r, excluding)["pageviews"] == 1


def test_the_settings_page_and_the_command_make_exclusions(client, site, django_user_model):
    admin = django_user_model.objects.create_user("admin", "a@example.org", "pw-12345678-long")
    add_member(site, admin, "admin")
    client.force_login(admin)
    page = "/dashboard/example.com/settings/exclusions"
    client.post(page, {"action": "add", "kind": "ip", "value": "203.0.113.7/24"})
    client.post(page, {"action": "add", "kind": "ip", "value": "not-an-ip"})
    bad = client.post(page, {"action": "add", "kind": "path", "value": "admin"}, follow=True)
    assert "a path pattern starts with /" in bad.content.decode()
    client.post(page, {"action": "add", "kind": "host", "value": "WWW.Staging.example.com"})
    assert sorted(site.exclusions.values_list("kind", "value")) == [
        ("host", "staging.example.com"),
        ("ip", "203.0.113.0/24"),
    ]
    assert "#tally-ignore=true" in client.get(page).content.decode()
    out = io.StringIO()
    call_command("exclude", "example.com", "--path", "/admin/**", stdout=out)
    call_command("exclude", "example.com", "--host", "staging.example.com", "--remove", stdout=out)
    assert sorted(site.exclusions.values_list("kind", "value")) == [("ip", "203.0.113.0/24"), ("path", "/admin/**")]
    assert "Excluded Path pattern /admin/**" in out.getvalue()


def test_the_tracker_honours_the_ignore_flags():
    from pathlib import Path

    tracker = (Path(__file__).resolve().parent.parent / "static" / "tracker.js").read_text()
    assert 'getItem("plausible_ignore")==="true"' in tracker and "tally-ignore=" in tracker
