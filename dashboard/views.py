"""The web UI. It only reads (through analytics.queries) and renders; it never writes Redis."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from analytics.models import Site


@login_required
def home(request):
    sites = Site.objects.all() if request.user.is_staff else Site.objects.none()
    return render(request, "dashboard/home.html", {"sites": sites})
