"""A study's exports for its researcher: each export the study's kind offers (CSV or JSON lines), the
datasheet that describes them, all of them in one zip, and a highlighting study's maps as an ERASER or
Hugging Face datasets folder (zipped)."""

from __future__ import annotations

from django.http import Http404, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse

from annotate.access import owned_or_404, researcher_required
from annotate.exports import tables as exports
from annotate.exports.datasheet import datasheet, datasheet_name, zip_bytes, zip_name
from annotate.exports.rationales import rationale_zip, rationale_zip_name
from annotate.exports.tables import UnknownExport
from annotate.models import Study


def _unverified(request) -> bool:
    return exports.include_unverified(request.GET.get(exports.INCLUDE_UNVERIFIED))


def _bad(message: str) -> HttpResponseBadRequest:
    return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")


def _attachment(response, name: str):
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@researcher_required
def study_export(request, uid, what: str, fmt: str):
    """One export; ``?include_unverified=1`` adds the answers not (yet) verified, marked as such. 404 for an
    export the study's kind does not offer."""
    study = owned_or_404(Study.objects.all(), request.user, uid=uid)
    try:
        unverified = _unverified(request)
        body = exports.stream(study, what, fmt, unverified)
    except exports.UnknownExport as exc:
        raise Http404(str(exc)) from None
    except ValueError as exc:
        return _bad(str(exc))
    response = StreamingHttpResponse(body, content_type=exports.content_type(fmt))
    return _attachment(response, exports.filename(study, what, fmt, unverified))


@researcher_required
def study_datasheet(request, uid):
    """The Markdown datasheet of the study's exports."""
    study = owned_or_404(Study.objects.select_related("dataset"), request.user, uid=uid)
    try:
        unverified = _unverified(request)
    except ValueError as exc:
        return _bad(str(exc))
    response = HttpResponse(datasheet(study, unverified), content_type="text/markdown; charset=utf-8")
    return _attachment(response, datasheet_name(study))


@researcher_required
def study_export_all(request, uid):
    """Every export of the study in both formats with its datasheet, as one zip."""
    study = owned_or_404(Study.objects.select_related("dataset"), request.user, uid=uid)
    try:
        unverified = _unverified(request)
    except ValueError as exc:
        return _bad(str(exc))
    response = HttpResponse(zip_bytes(study, unverified), content_type="application/zip")
    return _attachment(response, zip_name(study, unverified))


@researcher_required
def study_rationales(request, uid, fmt: str):
    """The study's human maps as a rationale data set (``eraser`` or ``hf``), zipped; 404 for a kind
    without maps over words."""
    study = owned_or_404(Study.objects.select_related("dataset"), request.user, uid=uid)
    try:
        body = rationale_zip(study, fmt)
    except UnknownExport as exc:
        raise Http404(str(exc)) from None
    except ValueError as exc:
        return _bad(str(exc))
    return _attachment(HttpResponse(body, content_type="application/zip"), rationale_zip_name(study, fmt))
