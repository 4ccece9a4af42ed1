from django.urls import path

from . import dedup_api, ingest_api, openapi, reports_api, stats_api

urlpatterns = [
    path("api/event", ingest_api.event, name="event"),
    path("api/v1/events", ingest_api.events, name="events"),
    path("api/v1/stats/timeseries", stats_api.timeseries, name="stats-timeseries"),
    path("api/v1/stats/pages", stats_api.pages, name="stats-pages"),
    path("api/v1/stats/retention", stats_api.retention, name="stats-retention"),
    path("api/v1/stats/realtime", stats_api.realtime, name="stats-realtime"),
    path("api/v1/seen", dedup_api.seen, name="seen"),
    path("api/v1/unseen", dedup_api.unseen, name="unseen"),
    path("api/v1/recommendations", dedup_api.recommendations, name="recommendations"),
    path("api/v1/reports/jobs/<str:job>", reports_api.job_status, name="report-job"),
    path("api/v1/reports/jobs/<str:job>/file", reports_api.job_file, name="report-file"),
    path("api/v1/reports/<str:fmt>", reports_api.report, name="report"),
    path("api/v1/openapi.json", openapi.document, name="openapi"),
]
