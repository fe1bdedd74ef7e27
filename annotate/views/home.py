"""The home page: a researcher's overview, or a short welcome."""

from __future__ import annotations

from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from annotate.access import is_researcher, visible_to
from annotate.models import Dataset, Study


def home(request):
    context = {}
    if is_researcher(request.user):
        context["studies"] = visible_to(Study.objects.select_related("dataset"), request.user).order_by(
            "-created"
        )[:10]
        context["datasets"] = visible_to(
            Dataset.objects.annotate(n_documents=Count("documents")), request.user
        ).order_by("-created")[:10]
    return render(request, "annotate/home.html", context)


#: The site's icon: a highlighted "h", as one small SVG (every browser asks for /favicon.ico).
FAVICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#ffe27a"/>'
    '<path d="M9 6h4v8.5c1.3-1.4 3-2.2 5-2.2 3.6 0 5.5 2.3 5.5 6.2V26h-4v-7.1c0-2.1-.9-3.2-2.7-3.2-2.2 0-3.8 '
    '1.6-3.8 4.3v6H9z" fill="#1f2933"/></svg>'
)


@require_safe
@cache_control(public=True, max_age=7 * 24 * 3600)
def favicon(request):
    """The site's icon, at the address browsers ask for it without being told."""
    return HttpResponse(FAVICON, content_type="image/svg+xml")
