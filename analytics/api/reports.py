"""Report exports: `GET /api/v1/reports/<csv|xlsx|json>?site=&from=&to=[&filters=]`.

Up to 31 days the file comes back at once; longer periods (or `async=1`) answer `202`
with a job whose progress `GET /api/v1/reports/jobs/<job>` reports and whose file
`GET /api/v1/reports/jobs/<job>/file` serves for 24 hours."""

from django.http import HttpResponse
from django.urls import reverse

from .. import tasks
from ..queries import access
from ..reports import exports, tables
from ..store.connection import get_redis
from . import params
from .http import ApiError, bearer_site, json_errors, json_response, methods
from .params import date_range


def _file_response(body: bytes, fmt: str, name: str) -> HttpResponse:
    response = HttpResponse(body, content_type=tables.FORMATS[fmt][0])
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _links(request, job: str) -> dict:
    return {
        "status_url": request.build_absolute_uri(reverse("report-job", args=[job])),
        "file_url": request.build_absolute_uri(reverse("report-file", args=[job])),
    }


@methods("GET")
@json_errors
def report(request, fmt):
    if fmt not in tables.FORMATS:
        raise ApiError(404, f"unknown format {fmt!r}; use csv, xlsx or json")
    site = params.SITE.read(request)
    start, end = date_range(request, site)
    filters = params.FILTERS.read(request)
    r = get_redis()
    if tables.is_small(start, end) and not params.ASYNC.read(request):
        body = tables.write(tables.build(r, site, start, end, filters=filters), fmt)
        return _file_response(body, fmt, tables.filename(site, start, end, fmt))
    job = exports.create(r, site, fmt, start, end, ";".join(str(f) for f in filters))
    tasks.build_export.delay(job, site.id)
    return json_response({"job": job, "state": "queued", **_links(request, job)}, status=202)


def _job(request, job: str) -> dict:
    info = exports.status(get_redis(), job)
    if info is None:
        raise ApiError(404, "no such export (they are kept 24 hours)")
    if request.META.get("HTTP_AUTHORIZATION"):
        if bearer_site(request).id != info["site"]:
            raise ApiError(404, "no such export (they are kept 24 hours)")
    elif not (request.user.is_authenticated and access.visible_sites(request.user).filter(pk=info["site"]).exists()):
        raise ApiError(401, "missing API key: send 'Authorization: Bearer <key>'", {"WWW-Authenticate": "Bearer"})
    return info


@methods("GET")
@json_errors
def job_status(request, job):
    info = _job(request, job)
    body = {k: info[k] for k in ("job", "state", "progress", "position", "format", "from", "to", "filename")}
    if info["state"] == "queued" and info["position"]:
        body["message"] = f"waiting for a free export slot: number {info['position']} in line"
    if info["state"] == "failed":
        body["error"] = info["error"]
    return json_response({**body, **_links(request, job)})


@methods("GET")
@json_errors
def job_file(request, job):
    info = _job(request, job)
    if info["state"] != "done":
        raise ApiError(409, f"the export is not ready: {info['state']}")
    body = exports.file_body(get_redis(), job)
    if body is None:
        raise ApiError(410, "the export's file has expired")
    return _file_response(body, info["format"], info["filename"])
