"""The home page: a researcher's overview, or a short welcome."""

from __future__ import annotations

from django.db.models import Count
from django.shortcuts import render

from annotate.models import Dataset, Study
from annotate.roles import is_researcher
from annotate.views.access import visible


def home(request):
    context = {}
    if is_researcher(request.user):
        context["studies"] = visible(Study.objects.select_related("dataset"), request.user).order_by(
            "-created"
        )[:10]
        context["datasets"] = visible(
            Dataset.objects.annotate(n_documents=Count("documents")), request.user
        ).order_by("-created")[:10]
    return render(request, "annotate/home.html", context)
