from django.urls import path

from . import live, views

app_name = "dashboard"
urlpatterns = [
    path("", views.home, name="home"),
    path("sites/new", views.add_site, name="add-site"),
    path("dashboard/<str:domain>/", views.site, name="site"),
    path("dashboard/<str:domain>/search", views.search, name="search"),
    path("dashboard/<str:domain>/page", views.page, name="page"),
    path("dashboard/<str:domain>/pages", views.pages, name="pages"),
    path("dashboard/<str:domain>/breakdown", views.breakdown, name="breakdown"),
    path("dashboard/<str:domain>/details/<str:prop>", views.details, name="details"),
    path("dashboard/<str:domain>/realtime", views.realtime, name="realtime"),
    path("dashboard/<str:domain>/recommend", views.recommend, name="recommend"),
    path("dashboard/<str:domain>/recommendations/", views.recommendations_page, name="recommendations"),
    path("dashboard/<str:domain>/filters", views.filters, name="filters"),
    path("dashboard/<str:domain>/segments", views.save_segment, name="save-segment"),
    path("dashboard/<str:domain>/annotations", views.annotate, name="annotate"),
    path("dashboard/<str:domain>/annotations/<int:annotation_id>/delete", views.unannotate, name="unannotate"),
    path("dashboard/<str:domain>/segments/<int:segment_id>/<str:action>", views.change_segment, name="segment"),
    path("share/<str:token>/", views.site, name="shared"),
    path("share/<str:token>/unlock", views.unlock_share, name="unlock-shared"),
    path("share/<str:token>/search", views.search, name="search-shared"),
    path("share/<str:token>/page", views.page, name="page-shared"),
    path("share/<str:token>/pages", views.pages, name="pages-shared"),
    path("share/<str:token>/breakdown", views.breakdown, name="breakdown-shared"),
    path("share/<str:token>/details/<str:prop>", views.details, name="details-shared"),
    path("share/<str:token>/realtime", views.realtime, name="realtime-shared"),
    path("live/share/<str:token>", live.live_shared, name="live-shared"),
    path("live/<str:domain>", live.live, name="live"),
]
