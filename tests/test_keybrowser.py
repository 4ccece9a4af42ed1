"""The key browser (analytics.keybrowser): one site's keys paged with SCAN, described,
ranked by size, unlinked one by one or all at once, and never another site's."""

import io
from datetime import date

import pytest

from analytics import keybrowser
from analytics.store import keys

DAY = date(2026, 11, 21)


def fill(r, site_id, pages=300):
    pipe = r.pipeline(transaction=False)
    for n in range(pages):
        pipe.set(keys.page_pageviews(site_id, DAY, f"/p/{n}"), n)
    pipe.execute()
    return {keys.page_pageviews(site_id, DAY, f"/p/{n}") for n in range(pages)}


def all_pages(r, site_id, pattern="*", count=50):
    seen, cursor = [], 0
    for _ in range(1000):
        cursor, rows = keybrowser.browse(r, site_id, pattern, cursor, count)
        seen.extend(row["key"] for row in rows)
        if cursor == 0:
            return seen
    raise AssertionError("browse never ended")


def test_it_pages_through_every_key_of_a_site_and_none_of_another(r):
    mine = fill(r, 1)
    fill(r, 12)
    fill(r, 2, pages=50)
    seen = all_pages(r, 1)
    assert len(seen) == len(set(seen)) and set(seen) == mine


def test_a_pattern_narrows_the_site_and_cannot_reach_another(r):
    fill(r, 1, pages=20)
    fill(r, 2, pages=20)
    assert set(all_pages(r, 1, "pv:*:page:/p/1*")) == {
        keys.page_pageviews(1, DAY, p) for p in ["/p/1", *(f"/p/1{n}" for n in range(10))]
    }
    assert all_pages(r, 1, "*{2}*") == []


def test_it_tells_type_ttl_and_bytes(r):
    r.set(keys.pageviews(1, DAY), 5, ex=100)
    r.pfadd(keys.site_visitors(1, DAY), "a")
    r.sadd(keys.pages_index(1, DAY), "/")
    r.hset(keys.revenue(1, DAY), "buy\x1fEUR", 100)
    _, rows = keybrowser.browse(r, 1)
    by_key = {row["key"]: row for row in rows}
    assert by_key[keys.pageviews(1, DAY)]["type"] == "string"
    assert 99 <= by_key[keys.pageviews(1, DAY)]["ttl"] <= 100
    assert by_key[keys.pages_index(1, DAY)]["type"] == "set" and by_key[keys.pages_index(1, DAY)]["ttl"] is None
    assert by_key[keys.revenue(1, DAY)]["type"] == "hash"
    for key, row in by_key.items():
        assert row["bytes"] == r.memory_usage(key) > 0


def test_big_keys_picks_the_largest_of_each_type(r):
    for n in range(10):
        r.set(keys.event_count(1, DAY, f"e{n}"), "x" * (100 * n + 1))
        # each set twice the last: MEMORY USAGE rounds to the allocator's size classes, and
        # Redis 8 estimated a set of 81 members above one of 91 (seen on CI's cluster leg)
        r.sadd(keys.events_index(1, date(2026, 1, n + 1)), *range(2**n))
    r.set(keys.event_count(2, DAY, "huge"), "x" * 100_000)
    report = keybrowser.big_keys(r, 1)
    assert [key for key, _ in report["string"]] == [keys.event_count(1, DAY, f"e{n}") for n in (9, 8, 7, 6, 5)]
    assert report["set"][0][0] == keys.events_index(1, date(2026, 1, 10))
    assert len(report["set"]) == 5
    sizes = [size for _, size in report["string"]]
    assert sizes == sorted(sizes, reverse=True)


def test_unlink_removes_the_sites_key_and_refuses_another_sites(r):
    r.set(keys.pageviews(1, DAY), 1)
    r.set(keys.pageviews(12, DAY), 1)
    with pytest.raises(ValueError):
        keybrowser.unlink(r, 1, keys.pageviews(12, DAY))
    with pytest.raises(ValueError):
        keybrowser.unlink(r, 1, "celery")
    assert keybrowser.unlink(r, 1, keys.pageviews(1, DAY)) is True
    assert keybrowser.unlink(r, 1, keys.pageviews(1, DAY)) is False
    assert r.exists(keys.pageviews(12, DAY)) == 1


def test_purge_removes_every_key_of_the_site_and_none_of_another(r):
    mine = fill(r, 1, pages=1234)
    theirs = fill(r, 12, pages=100)
    r.set("celery-task-meta-x", 1)
    batches = []
    assert keybrowser.purge(r, 1, batch=100, progress=batches.append) == len(mine)
    assert sum(batches) == len(mine) and len(batches) > 1
    assert r.exists(*mine) == 0
    assert r.exists(*theirs) == len(theirs) and r.exists("celery-task-meta-x")


def test_purgesite_removes_the_sites_keys_and_keeps_the_site(r, make_site):
    from django.core.management import call_command

    from analytics.models import Site

    site, _ = make_site("purge.example")
    other, _ = make_site("other.example")
    mine, theirs = fill(r, site.pk, pages=700), fill(r, other.pk, pages=10)
    out, err = io.StringIO(), io.StringIO()
    call_command("purgesite", "purge.example", "--yes", stdout=out, stderr=err)
    assert "Deleted 700 Redis keys of purge.example." in out.getvalue()
    assert "700" in err.getvalue()  # the progress bar
    assert r.exists(*mine) == 0 and r.exists(*theirs) == len(theirs)
    assert Site.objects.filter(pk=site.pk).exists()

    fill(r, site.pk, pages=3)
    call_command("purgesite", "purge.example", "--yes", "--delete-site", stdout=out, stderr=err)
    assert not Site.objects.filter(pk=site.pk).exists() and r.exists(*theirs) == len(theirs)


def test_purgesite_asks_first(r, make_site, monkeypatch):
    from django.core.management import CommandError, call_command

    site, _ = make_site("purge.example")
    mine = fill(r, site.pk, pages=5)
    monkeypatch.setattr("builtins.input", lambda prompt: "no")
    with pytest.raises(CommandError, match="not confirmed"):
        call_command("purgesite", "purge.example", stdout=io.StringIO(), stderr=io.StringIO())
    assert r.exists(*mine) == 5
    monkeypatch.setattr("builtins.input", lambda prompt: "purge.example")
    call_command("purgesite", "purge.example", stdout=io.StringIO(), stderr=io.StringIO())
    assert r.exists(*mine) == 0
    with pytest.raises(CommandError, match="no site"):
        call_command("purgesite", "nope.example", "--yes")


# The admin pages


def keys_url(site, tail=""):
    return f"/admin/analytics/site/{site.pk}/keys/{tail}"


def test_the_change_page_links_to_the_key_browser(admin_client, site):
    assert f'href="{keys_url(site)}"' in admin_client.get(f"/admin/analytics/site/{site.pk}/change/").content.decode()


def test_the_admin_lists_the_sites_keys_escaped_with_a_next_page(admin_client, site, r):
    fill(r, site.pk, pages=250)
    fill(r, site.pk + 1, pages=5)
    nasty = keys.page_pageviews(site.pk, DAY, "/<script>alert(1)</script>")
    r.set(nasty, 1)
    page = admin_client.get(keys_url(site), {"pattern": "*script*"}).content.decode()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "string" in page
    seen, cursor = set(), 0
    for _ in range(50):
        response = admin_client.get(keys_url(site), {"cursor": cursor})
        rows = response.context["rows"]
        seen |= {row["key"] for row in rows}
        cursor = response.context["next_cursor"]
        if not cursor:
            break
        assert f"cursor={cursor}" in response.content.decode()
    assert seen == fill(r, site.pk, pages=250) | {nasty}
    report = admin_client.get(keys_url(site), {"report": "1"})
    assert report.context["big_keys"][0][0] == "string"


def test_the_key_pages_need_change_permission(client, django_user_model, site):
    client.force_login(django_user_model.objects.create_user("staff", password="pw-12345678", is_staff=True))
    assert client.get(keys_url(site)).status_code == 403
    assert client.get(keys_url(site, "purge/")).status_code == 403
    client.logout()
    assert client.get(keys_url(site)).status_code == 302  # to the login page


@pytest.fixture
def csrf_admin(db, django_user_model):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-12345678"))
    return client


def csrf_token(response):
    return response.context["csrf_token"]


def test_unlink_asks_then_needs_a_post_with_csrf(csrf_admin, site, make_site, r):
    key = keys.page_pageviews(site.pk, DAY, "/<script>x</script>")
    r.set(key, 1)
    confirm = csrf_admin.get(keys_url(site, "unlink/"), {"key": key})
    assert confirm.status_code == 200 and r.exists(key)
    assert "<script>x" not in confirm.content.decode()
    assert csrf_admin.post(keys_url(site, "unlink/"), {"key": key}).status_code == 403  # no CSRF token
    assert r.exists(key)
    response = csrf_admin.post(keys_url(site, "unlink/"), {"key": key, "csrfmiddlewaretoken": csrf_token(confirm)})
    assert response.status_code == 302 and not r.exists(key)

    other, _ = make_site("other.example")
    theirs = keys.pageviews(other.pk, DAY)
    r.set(theirs, 1)
    assert csrf_admin.get(keys_url(site, "unlink/"), {"key": theirs}).status_code == 404
    assert (
        csrf_admin.post(
            keys_url(site, "unlink/"), {"key": theirs, "csrfmiddlewaretoken": csrf_token(confirm)}
        ).status_code
        == 404
    )
    assert r.exists(theirs)


def test_purge_asks_then_needs_a_post_with_csrf_and_says_how_many(csrf_admin, site, make_site, r):
    other, _ = make_site("other.example")
    mine, theirs = fill(r, site.pk, pages=42), fill(r, other.pk, pages=3)
    confirm = csrf_admin.get(keys_url(site, "purge/"))
    assert confirm.status_code == 200 and r.exists(*mine) == 42
    assert csrf_admin.post(keys_url(site, "purge/")).status_code == 403
    assert r.exists(*mine) == 42
    done = csrf_admin.post(keys_url(site, "purge/"), {"csrfmiddlewaretoken": csrf_token(confirm)})
    assert "Deleted 42 Redis keys of example.com" in done.content.decode()
    assert r.exists(*mine) == 0 and r.exists(*theirs) == 3


@pytest.mark.parametrize(
    "cursor", ["99999999999999999999999999", "18446744073709551616", "-1", "abc", "1e3", "\u0661\u0662", ""]
)
def test_a_cursor_that_is_no_scan_cursor_starts_over_with_a_message(admin_client, site, r, cursor):
    """Redis answers "invalid cursor" past 64 bits: the page starts over and says why."""
    fill(r, site.pk, pages=3)
    response = admin_client.get(keys_url(site), {"cursor": cursor})
    assert response.status_code == 200 and response.context["cursor"] == 0
    assert len(response.context["rows"]) == 3
    said = [str(m) for m in response.context["messages"]]
    assert said == (
        []
        if cursor == ""
        else ["Not a SCAN cursor (a whole number from 0 to 18446744073709551615): started from the first page."]
    )


def test_the_largest_cursor_is_still_one(admin_client, site, r):
    response = admin_client.get(keys_url(site), {"cursor": str(2**64 - 1)})
    assert response.status_code == 200 and response.context["cursor"] == 2**64 - 1
    assert not list(response.context["messages"])
