from django.contrib.auth import get_user_model, login
from django.http import HttpResponse
from django.urls import include, path


def login_as(request, username):
    """The test provider's sign-in: a test names who signs in (no form to fill)."""
    login(request, get_user_model().objects.get(username=username))
    return HttpResponse("signed in")


urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("login-as/<str:username>", login_as),
]
