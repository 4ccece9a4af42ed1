from django.urls import path

from . import views

app_name = "team"
urlpatterns = [
    path("dashboard/<str:domain>/settings/", views.general, name="general"),
    path("dashboard/<str:domain>/settings/members", views.members, name="members"),
    path("dashboard/<str:domain>/settings/reports", views.reports_page, name="reports"),
    path("dashboard/<str:domain>/settings/goals", views.goals_page, name="goals"),
    path("dashboard/<str:domain>/settings/keys", views.keys_page, name="keys"),
    path("dashboard/<str:domain>/settings/alerts", views.alerts_page, name="alerts"),
    path("dashboard/<str:domain>/settings/sharing", views.sharing_page, name="sharing"),
    path("dashboard/<str:domain>/settings/exclusions", views.exclusions_page, name="exclusions"),
    path("dashboard/<str:domain>/settings/imports", views.imports_page, name="imports"),
    path("dashboard/<str:domain>/settings/advanced", views.advanced_page, name="advanced"),
    path("dashboard/<str:domain>/settings/audit", views.audit_log, name="audit"),
    path("reports/unsubscribe/<str:token>", views.unsubscribe, name="unsubscribe"),
    path("invite/<str:token>", views.invitation, name="invitation"),
]
