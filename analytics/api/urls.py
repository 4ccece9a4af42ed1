from django.urls import path

from . import ingest, openapi, plausible_v1, plausible_v2, reports, stats
from .plausible_v1 import on_site_id

urlpatterns = [
    path("api/event", ingest.event, name="event"),
    path("api/v1/events", ingest.events, name="events"),
    path("api/v1/stats/timeseries", on_site_id(stats.timeseries, plausible_v1.timeseries), name="stats-timeseries"),
    path("api/v1/stats/aggregate", on_site_id(stats.aggregate, plausible_v1.aggregate), name="stats-aggregate"),
    path("api/v1/stats/breakdown", on_site_id(stats.breakdown, plausible_v1.breakdown), name="stats-breakdown"),
    path("api/v1/stats/funnel", stats.funnel, name="stats-funnel"),
    path("api/v1/stats/near", stats.near, name="stats-near"),
    path("api/v1/stats/pages", stats.pages, name="stats-pages"),
    path("api/v1/stats/retention", stats.retention, name="stats-retention"),
    path("api/v1/stats/dropped", stats.dropped, name="stats-dropped"),
    path("api/v1/stats/realtime", stats.realtime, name="stats-realtime"),
    path("api/v1/stats/realtime/visitors", plausible_v1.realtime_visitors, name="plausible-v1-realtime"),
    path("api/v1/reports/jobs/<str:job>", reports.job_status, name="report-job"),
    path("api/v1/reports/jobs/<str:job>/file", reports.job_file, name="report-file"),
    path("api/v1/reports/<str:fmt>", reports.report, name="report"),
    path("api/v2/query", plausible_v2.query, name="plausible-v2-query"),
    path("api/v1/openapi.json", openapi.document, name="openapi"),
]
