from django.urls import path

from . import api

urlpatterns = [
    path("api/v1/seen", api.seen, name="seen"),
    path("api/v1/unseen", api.unseen, name="unseen"),
    path("api/v1/recommendations", api.recommendations, name="recommendations"),
]
