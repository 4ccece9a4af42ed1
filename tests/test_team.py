"""Members and roles (team/): who may see and change what on a site, invitations through
a real SMTP server, removal ending access at once, the settings pages and the audit log."""

import io
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.sites import SiteInfo
from team.models import AuditEvent, Invitation, Membership
from team.roles import add_member
from tests.smtp_server import body, smtp  # noqa: F401 (a fixture)

pytestmark = pytest.mark.one_leg  # (the pages and the database: no Redis server involved beyond reading)

PASSWORD = "pw-12345678-long"


@pytest.fixture
def team(site, django_user_model, r):
    """One account per role on the site (which has a visit), and a stranger."""
    record(r, SiteInfo.from_model(site), [Hit(None, "/", "pageview", identity_source(None, "a", None, None))])
    people = {}
    for role in ("owner", "admin", "editor", "viewer"):
        people[role] = django_user_model.objects.create_user(role, f"{role}@example.org", PASSWORD)
        add_member(site, people[role], role)
    people["stranger"] = django_user_model.objects.create_user("stranger", "s@example.org", PASSWORD)
    return site, people


def as_(client, user):
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "role, settings_code, note_code",
    [("owner", 200, 302), ("admin", 200, 302), ("editor", 403, 302), ("viewer", 403, 403), ("stranger", 404, 404)],
)
def test_each_role_sees_and_changes_what_it_may(client, team, role, settings_code, note_code):
    site, people = team
    c = as_(client, people[role])
    assert c.get("/dashboard/example.com/?period=7d").status_code == (404 if role == "stranger" else 200)
    for page in ("settings/", "settings/members", "settings/audit"):
        assert c.get(f"/dashboard/example.com/{page}").status_code == settings_code, page
    note = c.post("/dashboard/example.com/annotations", {"date": "2026-01-02", "text": "Launch", "back": "?"})
    assert note.status_code == note_code
    segment = c.post("/dashboard/example.com/segments", {"name": "G", "filters": "source==Google", "back": "?"})
    assert segment.status_code == note_code


def test_a_viewers_page_offers_no_forms_to_change_it(client, team):
    site, people = team
    html = as_(client, people["viewer"]).get("/dashboard/example.com/?period=7d&filters=source%3D%3DGoogle")
    text = html.content.decode()
    assert 'action="/dashboard/example.com/annotations"' not in text and "Save segment" not in text
    assert "Settings</a>" not in text
    admin = as_(client, people["admin"]).get("/dashboard/example.com/?period=7d").content.decode()
    assert "Settings</a>" in admin and 'action="/dashboard/example.com/annotations"' in admin


def test_an_invitation_mailed_through_smtp_makes_an_account_with_its_role(client, team, smtp):  # noqa: F811
    site, people = team
    c = as_(client, people["admin"])
    answer = c.post(
        "/dashboard/example.com/settings/members", {"action": "invite", "email": "New@Example.org", "role": "editor"}
    )
    assert answer.status_code == 200 and answer["Cache-Control"] == "no-store"
    assert "/invite/" in answer.content.decode() and not answer.cookies.get("messages")  # (the link: not in a cookie)
    (mail,) = smtp.wait(1)
    assert mail["To"] == "new@example.org" and "example.com" in mail["Subject"]
    link = re.search(r"https?://\S+/invite/\S+", body(mail)).group(0)
    assert link in body(mail, "html")  # (the HTML part carries the same link)
    path = "/invite/" + link.rsplit("/invite/", 1)[1]
    c.logout()
    page = c.get(path)
    assert page.status_code == 200 and "as <strong>editor</strong>" in page.content.decode()
    refused = c.post(path, {"username": "newbie", "password": "short", "password2": "short"})
    assert refused.status_code == 200 and "too short" in refused.content.decode()
    odd = c.post(path, {"username": "<img src=x>", "password": PASSWORD, "password2": PASSWORD})
    assert odd.status_code == 200 and "letters, digits" in odd.content.decode()
    joined = c.post(path, {"username": "newbie", "password": PASSWORD, "password2": PASSWORD})
    assert joined.status_code == 302 and joined["Location"] == "/dashboard/example.com/"
    member = Membership.objects.get(site=site, user__username="newbie")
    assert member.role == "editor" and member.user.email == "new@example.org"
    assert c.get("/dashboard/example.com/?period=7d").status_code == 200  # (signed in)
    assert c.get(path).status_code == 410  # (it works once)
    assert not Invitation.objects.filter(token_hash=path.rsplit("/", 1)[1]).exists()  # (only its hash is kept)
    actions = list(AuditEvent.objects.filter(site=site).values_list("action", flat=True))
    assert actions[:2] == ["member.joined", "member.invited"]


def test_an_expired_or_revoked_invitation_opens_nothing(client, team):
    site, people = team
    expired, token = Invitation.create(site, "late@example.org", "viewer")
    expired.expires = timezone.now() - timedelta(seconds=1)
    expired.save()
    assert client.get(f"/invite/{token}").status_code == 410
    revoked, token = Invitation.create(site, "gone@example.org", "viewer", by=people["admin"])
    c = as_(client, people["admin"])
    c.post("/dashboard/example.com/settings/members", {"action": "revoke", "invitation": revoked.pk})
    assert c.get(f"/invite/{token}").status_code == 410
    assert client.get("/invite/not-a-token").status_code == 410


def test_a_signed_in_account_joins_without_losing_a_higher_role(client, team):
    site, people = team
    invitation, token = Invitation.create(site, "admin@example.org", "viewer")
    c = as_(client, people["admin"])
    assert c.post(f"/invite/{token}").status_code == 302
    assert Membership.objects.get(site=site, user=people["admin"]).role == "admin"


def test_admins_cannot_make_owners_and_the_last_owner_stays(client, team):
    site, people = team
    c = as_(client, people["admin"])
    editor = Membership.objects.get(site=site, user=people["editor"])
    owner = Membership.objects.get(site=site, user=people["owner"])
    c.post("/dashboard/example.com/settings/members", {"action": "role", "membership": editor.pk, "role": "owner"})
    assert Membership.objects.get(pk=editor.pk).role == "editor"
    c.post("/dashboard/example.com/settings/members", {"action": "remove", "membership": owner.pk})
    assert Membership.objects.get(pk=owner.pk).removed is None
    c.post("/dashboard/example.com/settings/members", {"action": "role", "membership": editor.pk, "role": "admin"})
    assert Membership.objects.get(pk=editor.pk).role == "admin"
    o = as_(client, people["owner"])
    o.post("/dashboard/example.com/settings/members", {"action": "role", "membership": owner.pk, "role": "viewer"})
    assert Membership.objects.get(pk=owner.pk).role == "owner"  # (the last owner)
    page = o.get("/dashboard/example.com/settings/members").content.decode()
    assert "A site keeps at least one owner" in page


def test_a_removed_member_is_refused_at_once_and_told_why(client, team):
    site, people = team
    viewer = Membership.objects.get(site=site, user=people["viewer"])
    as_(client, people["admin"]).post(
        "/dashboard/example.com/settings/members", {"action": "remove", "membership": viewer.pk}
    )
    c = as_(client, people["viewer"])
    refused = c.get("/dashboard/example.com/?period=7d")
    assert refused.status_code == 403 and "You were removed from example.com" in refused.content.decode()
    assert c.get("/dashboard/example.com/breakdown?property=source").status_code == 403
    assert "example.com" not in c.get("/").content.decode()
    assert AuditEvent.objects.filter(site=site, action="member.removed", detail__startswith="viewer").exists()
    add_member(site, people["viewer"], "viewer")  # (invited again: back)
    assert c.get("/dashboard/example.com/?period=7d").status_code == 200


def test_the_general_page_changes_the_time_zone_and_logs_it(client, team):
    site, people = team
    c = as_(client, people["admin"])
    c.post("/dashboard/example.com/settings/", {"timezone": "Europe/Berlin", "identity_mode": "stable"})
    site.refresh_from_db()
    assert site.timezone == "Europe/Berlin"
    bad = c.post("/dashboard/example.com/settings/", {"timezone": "Mars/Olympus", "identity_mode": "stable"})
    assert bad.status_code == 200 and "is no time zone" in bad.content.decode()
    log = c.get("/dashboard/example.com/settings/audit").content.decode()
    assert "settings.changed" in log and "time zone UTC → Europe/Berlin" in log


def test_manage_py_invite_prints_the_link(team, smtp):  # noqa: F811
    out = io.StringIO()
    call_command("invite", "example.com", "cli@example.org", "--role", "admin", stdout=out)
    link = out.getvalue().strip().splitlines()[-1]
    assert "/invite/" in link
    (mail,) = smtp.wait(1)
    assert link in body(mail)
    assert Invitation.objects.get(email="cli@example.org").role == "admin"


def test_the_members_page_escapes_what_members_typed(client, team, django_user_model):
    site, people = team
    odd = django_user_model.objects.create_user("<b>odd</b>", "<i>@example.org", PASSWORD)
    add_member(site, odd, "viewer")
    page = as_(client, people["admin"]).get("/dashboard/example.com/settings/members").content.decode()
    assert "<b>odd</b>" not in page and "&lt;b&gt;odd&lt;/b&gt;" in page


@pytest.mark.parametrize(
    "posted",
    [
        {},
        {"action": "remove", "membership": ""},
        {"action": "revoke", "invitation": "x"},
        {"action": "role", "membership": "99999999999999999999", "role": "viewer"},
        {"action": "invite", "email": "not an address", "role": "viewer"},
        {"action": "invite", "email": "a@example.org", "role": "emperor"},
    ],
)
def test_a_bad_members_form_is_told_not_a_500(client, team, posted):
    site, people = team
    answer = as_(client, people["admin"]).post("/dashboard/example.com/settings/members", posted)
    assert answer.status_code == 302
    assert Invitation.objects.count() == 0


def test_editors_add_and_delete_goals_and_funnels_with_their_rules_checked(client, team):
    site, people = team
    c = as_(client, people["editor"])
    page = "/dashboard/example.com/settings/goals"
    c.post(page, {"action": "add_goal", "kind": "event", "value": "Signup"})
    c.post(page, {"action": "add_goal", "kind": "page", "value": "/blog/*", "name": "Read the blog"})
    c.post(page, {"action": "add_goal", "kind": "page", "value": "blog"})  # (a path starts with /)
    assert sorted(site.goals.values_list("name", flat=True)) == ["Read the blog", "Signup"]
    assert "a path pattern starts with /" in c.get(page).content.decode()
    c.post(page, {"action": "add_funnel", "name": "Buy", "steps": "/pricing\nevent:Signup"})
    c.post(page, {"action": "add_funnel", "name": "Short", "steps": "/pricing"})
    assert list(site.funnels.values_list("name", flat=True)) == ["Buy"]
    goal = site.goals.get(name="Signup")
    c.post(page, {"action": "delete_goal", "id": goal.pk})
    c.post(page, {"action": "delete_goal", "id": "nope"})
    assert not site.goals.filter(name="Signup").exists()
    assert {"goal.added", "funnel.added", "goal.deleted"} <= set(AuditEvent.objects.values_list("action", flat=True))
    assert (
        as_(client, people["viewer"]).post(page, {"action": "add_goal", "kind": "event", "value": "X"}).status_code
        == 403
    )


def test_an_api_key_is_shown_once_and_revoked(client, team):
    from analytics.models import ApiKey, hash_api_key

    site, people = team
    c = as_(client, people["admin"])
    made = c.post("/dashboard/example.com/settings/keys", {"action": "create", "name": "backend"})
    assert made.status_code == 200 and made["Cache-Control"] == "no-store" and not made.cookies.get("messages")
    key = re.search(
        r'aria-label="The new API key" value="([^"]+)"|value="([^"]+)" aria-label="The new API key"',
        made.content.decode(),
    )
    key = next(k for k in key.groups() if k)
    stored = ApiKey.objects.get(key_hash=hash_api_key(key))
    assert stored.name == "backend" and key not in c.get("/dashboard/example.com/settings/keys").content.decode()
    c.post("/dashboard/example.com/settings/keys", {"action": "revoke", "id": stored.pk})
    assert not ApiKey.objects.filter(pk=stored.pk).exists()
    assert as_(client, people["editor"]).get("/dashboard/example.com/settings/keys").status_code == 403


def test_the_advanced_page_explains_changes_and_logs_the_policy(client, team):
    site, people = team
    c = as_(client, people["admin"])
    page = "/dashboard/example.com/settings/advanced"
    html = c.get(page).content.decode()
    assert "How long filters stay exact" in html and "Today's keys" in html and "filter bitmaps" in html
    form = {name: getattr(site, name) for name in __import__("team.views", fromlist=["ADVANCED"]).ADVANCED}
    form["bloom_nonscaling"] = ""
    refused = c.post(page, {**form, "segment_values": 5000})
    assert refused.status_code == 200 and "less than or equal to 1000" in refused.content.decode()
    assert c.post(page, {**form, "keep_segment_days": 30}).status_code == 302
    site.refresh_from_db()
    assert site.keep_segment_days == 30
    assert AuditEvent.objects.filter(action="settings.advanced", detail="keep_segment_days 90 → 30").exists()
    assert as_(client, people["editor"]).get(page).status_code == 403


def test_the_imports_page_lists_the_history_for_admins(client, team):
    from analytics.models import ImportedLog

    site, people = team
    ImportedLog.objects.create(site=site, sha256="1" * 64, kind="ga4", name="<b>export</b>.ndjson", imported=1234)
    html = as_(client, people["admin"]).get("/dashboard/example.com/settings/imports").content.decode()
    assert "&lt;b&gt;export&lt;/b&gt;.ndjson" in html and "1,234" in html and ">upload files</a>" not in html
    staff = as_(client, people["owner"])
    people["owner"].is_staff = True
    people["owner"].save()
    assert ">upload files</a>" in staff.get("/dashboard/example.com/settings/imports").content.decode()
    assert as_(client, people["editor"]).get("/dashboard/example.com/settings/imports").status_code == 403
