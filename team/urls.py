from django.urls import path

from . import views

app_name = "team"
urlpatterns = [
    path("dashboard/<str:domain>/settings/", views.general, name="general"),
    path("dashboard/<str:domain>/settings/members", views.members, name="members"),
    path("dashboard/<str:domain>/settings/audit", views.audit_log, name="audit"),
    path("invite/<str:token>", views.invitation, name="invitation"),
]
