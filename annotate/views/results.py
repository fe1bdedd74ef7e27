"""Every kind's results page, mounted once as Django's admin mounts a registered model: the study's kind
is looked up in the registry and its results class (:attr:`annotate.tasks.base.TaskKind.results`, a
:class:`~annotate.tasks.results.ResultsPage`) computes the page and its tables."""

from __future__ import annotations

from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import render

from annotate.access import owned_or_404, researcher_required
from annotate.models import Study
from annotate.protocol.summary import protocol_summary
from annotate.quality.exclusion import left_out
from annotate.tasks import get_kind
from annotate.tasks.results import BadQuery, ResultsPage


def _page(request, uid) -> ResultsPage:
    """The results page of the researcher's study ``uid`` (404 when not theirs or its kind has none)."""
    study = owned_or_404(Study.objects.select_related("dataset", "owner"), request.user, uid=uid)
    kind = get_kind(study.kind)
    page_class = kind.results_page()
    if page_class is None:
        raise Http404(f"a {study.kind} study has no results page")
    return page_class(request, study)


def _bad(exc: BadQuery) -> HttpResponseBadRequest:
    return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")


@researcher_required
def results_page(request, uid):
    """The study's results page, with how many answers its figures leave out and why
    (:func:`annotate.quality.exclusion.left_out`); a query value the page does not offer is a 400 naming
    the field."""
    try:
        page = _page(request, uid)
        context = page.context()
    except BadQuery as exc:
        return _bad(exc)
    context["kind"] = get_kind(page.study.kind)
    context["left_out"] = left_out(page.study)
    context["protocol_summary"] = protocol_summary(page.study)
    return render(request, page.template, context)


@researcher_required
def results_table(request, uid, table: str, fmt: str):
    """One table of the study's results page as a file; 404 for a table or format the page does not offer."""
    try:
        page = _page(request, uid)
        if table not in page.tables or fmt not in page.formats:
            raise Http404(f"the results of a {page.study.kind} study have no {table}.{fmt}")
        return page.download(table, fmt)
    except BadQuery as exc:
        return _bad(exc)
