"""Referrer spam (issue 37, item 2): an event whose referrer's host (or a domain above it)
is on Matomo's vendored list is dropped as a bot's and says so; a clean referrer counts;
a site can switch it off; the list refreshes through a checked command."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from analytics.ingest import bots
from analytics.models import ApiKey
from tests.test_api_event import post, today_row

pytestmark = pytest.mark.one_leg  # (decided in Python at the edge)

SPAM = "https://0-0.fr/cheap-seo"


def view(referrer):
    return {"name": "pageview", "url": "https://example.com/", "domain": "example.com", "referrer": referrer}


@pytest.mark.parametrize(
    "referrer, spam",
    [(SPAM, True), ("http://www.0-0.fr/", True), ("https://sub.0-0.fr/x", True), ("https://www.google.com/", False),
     ("https://0-0.fr.example.org/", False), (None, False), ("not a url", False)],
)  # fmt: skip
def test_the_list_matches_a_host_and_the_domains_above_it(referrer, spam):
    assert bots.referrer_spam(referrer) is spam


def test_a_spam_referrers_event_is_dropped_and_says_so(client, site, r):
    dropped = post(client, view(SPAM), REMOTE_ADDR="198.51.100.7")
    assert dropped.status_code == 202 and dropped["X-Tally-Dropped"] == "referrer-spam"
    assert today_row(r, site)["pageviews"] == 0
    counted = post(client, view("https://www.google.com/"), REMOTE_ADDR="198.51.100.8")
    assert counted.status_code == 202 and "X-Tally-Dropped" not in counted
    assert today_row(r, site)["pageviews"] == 1


def test_a_site_may_count_them_and_a_batch_drops_them_as_bots(client, site, r):
    key = ApiKey.create(site)
    events = [
        {"url": "https://example.com/", "visitor": "a", "referrer": SPAM},
        {"url": "https://example.com/", "visitor": "b"},
    ]
    answer = client.post(
        "/api/v1/events", data=json.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    ).json()
    assert (answer["accepted"], answer["bots_dropped"]) == (1, 1)
    site.drop_referrer_spam = False
    site.save()
    assert "X-Tally-Dropped" not in post(client, view(SPAM), REMOTE_ADDR="198.51.100.9")
    assert today_row(r, site)["pageviews"] == 2


def test_the_refresh_command_checks_the_list_before_it_replaces_it(tmp_path, monkeypatch):
    target = tmp_path / "spammers.txt"
    target.write_text("old.example\n")
    monkeypatch.setattr("analytics.management.commands.update_bot_data.SPAM_LIST", target)
    broken = tmp_path / "broken.txt"
    broken.write_text("<html>rate limited</html>\n")
    with pytest.raises(CommandError):
        call_command("update_bot_data", "--from", str(broken))
    assert target.read_text() == "old.example\n"
    fresh = tmp_path / "fresh.txt"
    fresh.write_text("\n".join(f"spam{n}.example" for n in range(600)) + "\nOLD.example\n")
    out = io.StringIO()
    call_command("update_bot_data", "--from", str(fresh), stdout=out)
    assert "601 hosts (600 new, 0 gone)" in out.getvalue() and "old.example" in target.read_text()
