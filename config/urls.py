from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path

from server.login import ThrottledLoginView


def favicon(request):
    """Browsers ask for /favicon.ico on pages that link no icon (a JSON answer, a file): the SVG,
    not a 404. The static name is looked up per request since it is hashed by collectstatic."""
    return HttpResponseRedirect(static("favicon.svg"))  # (not permanent: the hashed name changes with the file)


urlpatterns = [
    path("favicon.ico", favicon),
    path("", include("analytics.api.urls")),
    path("", include("recommendations.urls")),
    path("admin/", admin.site.urls),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("oidc/", include("mozilla_django_oidc.urls")),  # (single sign-on, when OIDC_ISSUER is set: team/sso.py)
    path("", include("team.urls")),
    path("", include("dashboard.urls")),
]


def handler404(request, exception=None):
    """JSON for API paths (clients parse it), Django's page for the rest."""
    if request.path.startswith("/api/"):
        from analytics.api.http import json_response

        return json_response({"error": f"no such endpoint: {request.path}"}, status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)
