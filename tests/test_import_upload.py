"""A site's Imports page in the admin: files uploaded there become a job a Celery worker
runs (eagerly here), the job and the import are listed, a Plausible import can be removed
and a replayed one cannot; only whoever may change the site gets any of it."""

import io
import os
import re
import time
import urllib.error
import urllib.request
import zipfile
from datetime import date
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from analytics import tasks
from analytics.models import DailyMetrics, ImportedLog, ImportJob, PageDaily
from analytics.sites import SiteInfo
from team.roles import add_member
from tests.celery_worker import start_worker
from tests.imports_data import gz, make_events, umami_export

pytestmark = pytest.mark.one_leg

VISITORS = (
    "date,visitors,pageviews,bounces,visits,visit_duration\n"
    "2024-01-01,10,25,3,12,600\n"
    "2024-01-02,7,14,2,8,300\n"
    "2024-01-03,4,9,1,5,120\n"
)
PAGES = (
    "date,hostname,page,visits,visitors,pageviews,scroll_depth,pageleave_visitors\n"
    "2024-01-01,example.com,/,12,10,20,,\n"
    "2024-01-01,example.com,/pricing,3,3,5,,\n"
    "2024-01-02,example.com,/,8,7,14,,\n"
    "2024-01-03,example.com,/,5,4,9,,\n"
)
DAYS = {date(2024, 1, 1): (10, 25), date(2024, 1, 2): (7, 14), date(2024, 1, 3): (4, 9)}
NASTY = "<img src=x onerror=alert(1)>.zip"


def plausible_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("imported_visitors_20240101_20240131.csv", VISITORS)
        archive.writestr("imported_pages_20240101_20240131.csv", PAGES)
    return out.getvalue()


def imports_url(site):
    return f"/admin/analytics/site/{site.pk}/imports/"


def upload(client, site, kind, *files: tuple[str, bytes]):
    data = {"kind": kind, "files": [SimpleUploadedFile(name, content) for name, content in files]}
    return client.post(f"{imports_url(site)}upload/", data, follow=True)


def remove_url(site, imported):
    return f"{imports_url(site)}{imported.pk}/remove/"


def stored_days(site):
    return {
        row.date: (row.visitors, row.pageviews)
        for row in DailyMetrics.objects.filter(site=site, date__range=(date(2024, 1, 1), date(2024, 1, 31)))
    }


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


@pytest.fixture
def owner(django_user_model, site):
    """Staff who may change sites (the admin's rule), and an owner of this one."""
    user = django_user_model.objects.create_user("owner", password="pw-12345678", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_site", "change_site"]))
    add_member(site, user, "owner")
    return user


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.mark.parametrize("on_disk", [False, True], ids=["in-memory", "on-disk"])
def test_it_imports_an_uploaded_plausible_export_as_a_job(owner_client, owner, site, var_dir, settings, on_disk):
    if on_disk:
        settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0  # (Django streams the upload to a temporary file: it is moved)
    response = upload(owner_client, site, "plausible", ("export.zip", plausible_zip()))
    assert response.status_code == 200 and response.redirect_chain[-1][0] == imports_url(site)

    job = ImportJob.objects.get(site=site)
    assert job.status == ImportJob.Status.DONE and job.error == "" and job.user == owner
    assert job.names == ["export.zip"] and job.started and job.finished
    assert any("imported 3 day(s), 2024-01-01 to 2024-01-03" in line for line in job.lines)
    assert not (var_dir / "imports" / str(job.pk)).exists()  # (the upload, deleted once it ran)

    imported = ImportedLog.objects.get(site=site)
    assert (imported.kind, imported.name) == ("plausible", "export.zip")
    assert (imported.first_day, imported.last_day) == (date(2024, 1, 1), date(2024, 1, 3))
    assert stored_days(site) == DAYS
    assert PageDaily.objects.get(site=site, date=date(2024, 1, 1), path="/pricing").pageviews == 5

    page = response.content.decode()
    assert "Done" in page and "2024-01-01 to 2024-01-03" in page and "Remove this import" in page
    assert 'http-equiv="refresh"' not in page  # (nothing left to wait for)


def test_the_same_export_again_is_already_imported_and_changes_nothing(owner_client, site):
    upload(owner_client, site, "plausible", ("export.zip", plausible_zip()))
    before = list(DailyMetrics.objects.filter(site=site).order_by("date").values())

    response = upload(owner_client, site, "plausible", ("again.zip", plausible_zip()))
    again = ImportJob.objects.filter(site=site).first()
    assert again is not None and again.names == ["again.zip"] and again.status == ImportJob.Status.DONE
    assert any("already imported" in line for line in again.lines)
    assert "already imported" in response.content.decode()
    assert ImportedLog.objects.filter(site=site).count() == 1
    assert list(DailyMetrics.objects.filter(site=site).order_by("date").values()) == before


def test_a_garbage_file_fails_with_the_reason_shown_escaped(owner_client, site, var_dir):
    response = upload(owner_client, site, "plausible", (NASTY, b"\x00not a zip at all"))
    job = ImportJob.objects.get(site=site)
    assert job.status == ImportJob.Status.FAILED
    assert NASTY in job.error and "nothing was imported" in job.error
    assert str(var_dir) not in job.error  # (the sender's name for the file, not our path)
    page = response.content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;.zip" in page and NASTY not in page
    assert "nothing was imported" in page
    assert not ImportedLog.objects.filter(site=site).exists()
    assert not (var_dir / "imports" / str(job.pk)).exists()


def test_remove_takes_a_plausible_import_out_after_a_confirmation(owner_client, site):
    upload(owner_client, site, "plausible", ("export.zip", plausible_zip()))
    imported = ImportedLog.objects.get(site=site)

    confirm = owner_client.get(remove_url(site, imported))
    assert confirm.status_code == 200 and "export.zip" in confirm.content.decode()
    assert ImportedLog.objects.filter(pk=imported.pk).exists()  # (GET only asks)

    response = owner_client.post(remove_url(site, imported), follow=True)
    assert response.status_code == 200 and "Removed the import export.zip: 3 day(s)." in response.content.decode()
    assert not ImportedLog.objects.filter(pk=imported.pk).exists()
    assert stored_days(site) == {}
    assert not PageDaily.objects.filter(site=site, date__year=2024).exists()


def test_a_replayed_import_is_counted_and_cannot_be_removed(owner_client, site, var_dir):
    events = make_events(ZoneInfo("UTC"), SiteInfo.from_model(site).today(), seed=7, visitors=15)
    response = upload(owner_client, site, "umami", ("umami.csv.gz", gz(umami_export(events, seed=7))))
    job = ImportJob.objects.get(site=site)
    assert job.status == ImportJob.Status.DONE, job.error
    assert job.paths[0].endswith(".gz") and not (var_dir / "imports" / str(job.pk)).exists()
    imported = ImportedLog.objects.get(site=site)
    assert imported.kind == "umami" and imported.name == "umami.csv.gz" and imported.imported > 0
    page = response.content.decode()
    assert "Cannot be removed" in page and remove_url(site, imported) not in page

    response = owner_client.post(remove_url(site, imported), follow=True)
    assert "The import umami.csv.gz cannot be removed" in response.content.decode()
    assert ImportedLog.objects.filter(pk=imported.pk).exists()


def test_who_may_not_change_the_site_cannot_see_upload_or_remove(client, django_user_model, owner_client, site):
    upload(owner_client, site, "plausible", ("export.zip", plausible_zip()))
    imported = ImportedLog.objects.get(site=site)
    jobs = ImportJob.objects.count()

    stranger = django_user_model.objects.create_user("stranger", password="pw-12345678", is_staff=True)
    owner_not_staff = django_user_model.objects.create_user("reader", password="pw-12345678")
    add_member(site, owner_not_staff, "owner")  # (may read the dashboard, not the admin)
    for user, refused in ((stranger, 403), (owner_not_staff, 302)):
        other = Client()
        other.force_login(user)
        assert other.get(imports_url(site)).status_code == refused
        data = {"kind": "plausible", "files": [SimpleUploadedFile("x.zip", plausible_zip())]}
        assert other.post(f"{imports_url(site)}upload/", data).status_code == refused
        assert other.get(remove_url(site, imported)).status_code == refused
        assert other.post(remove_url(site, imported)).status_code == refused
    assert ImportedLog.objects.filter(pk=imported.pk).exists() and stored_days(site) == DAYS
    assert ImportJob.objects.count() == jobs


def test_a_job_runs_once_and_one_whose_site_went_leaves_no_files(site, var_dir):
    job = ImportJob.objects.create(site=site, kind="plausible", names=["export.zip"])
    job.folder().mkdir(parents=True)
    (job.folder() / "1").write_bytes(plausible_zip())
    job.paths = [str(job.folder() / "1")]
    job.save()
    tasks.run_import(job.pk)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE and not job.folder().exists()
    tasks.run_import(job.pk)  # (the same message delivered again)
    assert ImportJob.objects.get(pk=job.pk).lines == job.lines

    gone = ImportJob.objects.create(site=site, kind="plausible", names=["export.zip"])
    gone.folder().mkdir(parents=True)
    (gone.folder() / "1").write_bytes(plausible_zip())
    site.delete()
    tasks.run_import(gone.pk)
    assert not gone.folder().exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_the_upload(
    client, django_user_model, make_site, redis_server, eager_celery, var_dir, settings
):
    """The page answers before the import is done; a worker on the same var/ directory does it."""
    eager_celery.conf.task_always_eager = False
    site, _ = make_site()
    client.force_login(django_user_model.objects.create_superuser("admin", "", "pw-12345678"))
    env = dict(
        os.environ,
        REDIS_URL=redis_server.url,
        REDIS_CLUSTER_URL=settings.REDIS_CLUSTER_URL,
        CELERY_BROKER_URL=redis_server.url,
        DATABASE_URL=f"sqlite:///{settings.DATABASES['default']['NAME']}",
        TALLY_VAR_DIR=str(var_dir),
    )
    worker = start_worker(env)
    try:
        eager_celery.conf.broker_url = redis_server.url
        response = upload(client, site, "plausible", ("export.zip", plausible_zip()))
        assert 'http-equiv="refresh"' in response.content.decode()  # (queued: the page waits with it)
        deadline = time.monotonic() + 60
        while ImportJob.objects.get(site=site).active:
            assert worker.poll() is None, worker.stdout.read() if worker.stdout else ""
            assert time.monotonic() < deadline, "the worker did not run the import in time"
            time.sleep(0.2)
        assert ImportJob.objects.get(site=site).status == ImportJob.Status.DONE
        assert stored_days(site) == DAYS and not list((var_dir / "imports").glob("*/*"))
    finally:
        worker.terminate()
        worker.wait(20)


def test_an_import_of_another_site_is_not_found(owner_client, site, make_site):
    other, _ = make_site("other.example")
    upload(owner_client, site, "plausible", ("export.zip", plausible_zip()))
    imported = ImportedLog.objects.get(site=site)
    assert owner_client.get(remove_url(other, imported)).status_code in (403, 404)
    assert owner_client.post(remove_url(other, imported)).status_code in (403, 404)
    assert ImportedLog.objects.filter(pk=imported.pk).exists()


def test_it_checks_csrf(owner, site):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    data = {"kind": "plausible", "files": [SimpleUploadedFile("export.zip", plausible_zip())]}
    assert client.post(f"{imports_url(site)}upload/", data).status_code == 403
    assert not ImportJob.objects.exists()

    client.get(imports_url(site))  # (sets the CSRF cookie)
    token = client.cookies["csrftoken"].value
    data = {"kind": "plausible", "files": [SimpleUploadedFile("export.zip", plausible_zip())]}
    response = client.post(f"{imports_url(site)}upload/", {**data, "csrfmiddlewaretoken": token})
    assert response.status_code == 302 and ImportJob.objects.get().status == ImportJob.Status.DONE

    imported = ImportedLog.objects.get(site=site)
    assert client.post(remove_url(site, imported)).status_code == 403
    assert ImportedLog.objects.filter(pk=imported.pk).exists()


def test_an_upload_over_the_limit_is_refused_before_it_is_read(owner_client, site, settings):
    settings.IMPORT_UPLOAD_MAX_BYTES = 1000
    response = owner_client.post(
        f"{imports_url(site)}upload/", {"kind": "plausible", "files": [SimpleUploadedFile("big.zip", b"x" * 5000)]}
    )
    assert response.status_code == 413
    assert "over the 1000 B this page takes" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_the_form_says_what_is_missing(owner_client, site):
    response = owner_client.post(f"{imports_url(site)}upload/", {"kind": "plausible"})
    assert response.status_code == 400 and "Choose the file(s) to import." in response.content.decode()
    response = owner_client.post(
        f"{imports_url(site)}upload/", {"kind": "nope", "files": [SimpleUploadedFile("a.csv", b"x")]}
    )
    assert response.status_code == 400 and "Choose what the files are" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_the_page_offers_every_kind_and_reloads_while_a_job_waits(owner_client, site, settings):
    settings.IMPORT_UPLOAD_MAX_BYTES = 2 << 20  # (server/front.py lets a staff upload up to it)
    page = owner_client.get(imports_url(site)).content.decode()
    assert "Up to 2.0 MB in all." in page
    for kind in ("plausible", "ga4", "umami", "log"):
        assert f'<option value="{kind}"' in page
    assert 'enctype="multipart/form-data"' in page and "multiple" in page and "csrfmiddlewaretoken" in page
    assert 'http-equiv="refresh"' not in page

    ImportJob.objects.create(site=site, kind="log", names=["access.log"])
    page = owner_client.get(imports_url(site)).content.decode()
    assert f'http-equiv="refresh" content="3; url={imports_url(site)}"' in page and "Queued" in page


def test_the_change_page_links_to_the_imports_page(owner_client, site):
    page = owner_client.get(f"/admin/analytics/site/{site.pk}/change/").content.decode()
    assert f'href="{imports_url(site)}"' in page


def _post(url: str, body: bytes, headers: dict) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.mark.slow
def test_through_make_runs_front_a_staff_upload_may_pass_the_body_limit_and_no_one_elses(
    front_server, owner, site, var_dir, settings
):
    """server/front.py reads no body past MAX_BATCH_BODY (16 MB), but for an upload to the
    Imports page from a staff member's session: that one reaches Django whole, spooled."""
    client = Client()
    client.force_login(owner)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    opener = urllib.request.build_opener(_NoRedirect)
    with opener.open(
        urllib.request.Request(front_server + imports_url(site), headers={"Cookie": f"sessionid={session}"}),
        timeout=10,
    ) as page:
        html = page.read().decode()
        csrf_cookie = next(
            v.split(";")[0].split("=", 1)[1] for k, v in page.headers.items() if v.startswith("csrftoken=")
        )
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)[1]
    big = os.urandom(1024) * (17 * 1024)  # (17 MB: past the usual limit)
    boundary = "tally-test-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{token}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="kind"\r\n\r\nplausible\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="export.zip"\r\n'
            "Content-Type: application/zip\r\n\r\n"
        ).encode()
        + big
        + f"\r\n--{boundary}--\r\n".encode()
    )
    form = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    status, answer = _post(front_server + imports_url(site) + "upload/", body, form)
    assert status == 413 and b"body too large" in answer  # (no session: the usual limit)
    cookies = {"Cookie": f"sessionid={session}; csrftoken={csrf_cookie}"}
    request = urllib.request.Request(
        front_server + imports_url(site) + "upload/", data=body, headers={**form, **cookies}, method="POST"
    )
    try:
        opener.open(request, timeout=60)
    except urllib.error.HTTPError as e:
        assert e.code == 302, e.read()[:300]  # (to the Imports page)
    job = ImportJob.objects.get()
    assert job.names == ["export.zip"] and os.path.getsize(job.paths[0]) == len(big)
    tasks.run_import(job.pk)  # (no worker beside this front: the job is run here)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED and "export.zip" in job.error
    assert not os.path.exists(job.paths[0])
