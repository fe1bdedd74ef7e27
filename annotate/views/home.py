"""The home page: a researcher's overview, or a short welcome."""

from __future__ import annotations

from django.db.models import Count
from django.shortcuts import render

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
