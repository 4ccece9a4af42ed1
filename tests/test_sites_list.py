"""The sites list (each site's visitors in the last 24 hours and its hours, against the
events) and the add-site flow that ends on the snippet and the waiting page."""

from datetime import UTC, datetime, timedelta

import pytest

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import Site
from analytics.queries import last_24_hours
from analytics.sites import SiteInfo
from team.models import Membership
from team.roles import add_member

pytestmark = pytest.mark.one_leg  # (pages, mail and webhooks: the numbers behind them are tested on every server)

PASSWORD = "pw-12345678-long"


def test_the_last_24_hours_are_the_events_of_the_24_hours(site, r):
    site.timezone = "Asia/Kolkata"  # (a half-hour zone: its hours start at :30 UTC)
    site.save()
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    sent = {  # hours ago -> visitors
        0: ["a", "b"],
        5: ["a", "c"],
        23: ["d"],
        25: ["e"],  # (before the 24 hours)
    }
    hits = [
        Hit(now - timedelta(hours=back), "/", "pageview", identity_source(None, v, None, None))
        for back, people in sent.items()
        for v in people
    ]
    record(r, info, sorted(hits, key=lambda h: h.ts), now=now)
    visitors, hours = last_24_hours(r, info, now)
    assert visitors == 4 and len(hours) == 24  # (a, b, c, d)
    assert hours[-1] == 2 and hours[-6] == 2 and hours[0] == 1 and sum(hours) == 5


def test_the_sites_list_shows_each_sites_day_and_only_the_members_sites(client, make_site, r, django_user_model):
    mine, _ = make_site("mine.example")
    theirs, _ = make_site("theirs.example")
    user = django_user_model.objects.create_user("ana", "ana@example.org", PASSWORD)
    add_member(mine, user, "viewer")
    record(
        r,
        SiteInfo.from_model(mine),
        [Hit(None, "/", "pageview", identity_source(None, f"v{n}", None, None)) for n in range(3)],
    )
    client.force_login(user)
    html = client.get("/").content.decode()
    assert "mine.example" in html and "theirs.example" not in html
    assert '<strong>3</strong> <span class="muted">visitors in the last 24 hours' in html
    assert '<polyline fill="none"' in html and "+ Add site" not in html  # (a viewer adds no sites)
    assert client.get("/sites/new").status_code == 403


def test_an_owner_adds_a_site_and_lands_on_its_snippet(client, make_site, django_user_model):
    first, _ = make_site("first.example")
    owner = django_user_model.objects.create_user("olga", "o@example.org", PASSWORD)
    add_member(first, owner, "owner")
    client.force_login(owner)
    assert "+ Add site" in client.get("/").content.decode()
    bad = client.post("/sites/new", {"domain": "not a domain!", "timezone": "Europe/Berlin"})
    assert bad.status_code == 200 and "lower-case host name" in bad.content.decode()
    zone = client.post("/sites/new", {"domain": "new.example", "timezone": "Mars/Base"})
    assert zone.status_code == 200 and not Site.objects.filter(domain="new.example").exists()
    made = client.post("/sites/new", {"domain": "https://New.example/blog", "timezone": "Europe/Berlin"})
    assert made.status_code == 302 and made["Location"] == "/dashboard/new.example/"
    assert Membership.objects.get(site__domain="new.example", user=owner).role == "owner"
    waiting = client.get("/dashboard/new.example/").content.decode()
    assert "Waiting for the first event" in waiting and 'data-domain="new.example"' in waiting.replace("&quot;", '"')
    dup = client.post("/sites/new", {"domain": "new.example", "timezone": "UTC"})
    assert dup.status_code == 200 and "already exists" in dup.content.decode()


@pytest.mark.parametrize("bad", ["", "a" * 300, "<script>", "ex ample.com"])
def test_a_bad_domain_is_told_not_a_500(client, admin_user, bad):
    client.force_login(admin_user)
    answer = client.post("/sites/new", {"domain": bad, "timezone": "UTC"})
    assert answer.status_code == 200 and 'role="alert"' in answer.content.decode()
    assert "<script>" not in answer.content.decode().split("<main>")[1]
