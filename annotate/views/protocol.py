"""The annotator's protocol pages around the items: the consent page, the pre- and post-study
questionnaires, and the plain pages for a participant who declined or did not qualify; and the
researcher's protocol page (a preview of what participants see, the consent text's versions).

The study's entry page (:func:`annotate.views.work.entry`) shows the step the participant is at
(:func:`annotate.protocol.stages.before_items`) instead of the items; the forms here post back with the
worker's own token (a crowd platform's frame sends no CSRF cookie) and lead back to the entry page."""

from __future__ import annotations

from contextlib import suppress

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.crypto import constant_time_compare
from django.views.decorators.csrf import csrf_exempt

from annotate.access import owned_or_404, researcher_required
from annotate.crowd.providers import get_provider
from annotate.handout.workers import Seat, session_seat, work_token
from annotate.models import Study
from annotate.protocol import consent, stages, surveys
from annotate.protocol.consent import ConsentStale
from annotate.protocol.markdown import render_markdown
from annotate.protocol.plan import added_seconds
from annotate.studies.service import StudyInvalid, update_consent
from annotate.views.framing import crowd_frameable

#: What a participant who leaves the study early does on each platform.
RETURN_STEPS = {
    "prolific": "Please return your submission on Prolific: on the Prolific page of this study choose "
    "\u201cReturn\u201d (or \u201cStop without completing\u201d). Returning does not count against you.",
    "mturk": "Please return this HIT on Mechanical Turk with its \u201cReturn\u201d button. Do not submit "
    "it: without a completion it cannot be paid, and returning does not count against you.",
}
LOCAL_STEP = "You may close this page now."


def return_step(study: Study) -> str:
    """What a participant leaving ``study`` without completing it does on its platform."""
    return RETURN_STEPS.get(get_provider(study.provider).name, LOCAL_STEP)


def _context(study: Study, seat: Seat, **more) -> dict:
    return {"study": study, "token": work_token(seat.worker_id), **more}


def stage_page(request, study: Study, seat: Seat, stage: str) -> HttpResponse:
    """The page of a participant's protocol ``stage`` (anything but ``WORK``)."""
    if stage == stages.CONSENT:
        version = consent.current_version(study)
        assert version is not None
        context = _context(study, seat, version=version, consent_html=render_markdown(version.text))
        return render(request, "annotate/work/consent.html", context)
    if stage == stages.PRE_SURVEY:
        return survey_page(request, study, seat, "pre")
    reasons = {
        stages.DECLINED: "declined",
        stages.TRAINING_FAILED: "training_failed",
        stages.ATTENTION_FAILED: "attention_failed",
    }
    reason = reasons.get(stage, "screened_out")
    context = {"study": study, "reason": reason, "return_step": return_step(study)}
    return render(request, "annotate/work/left.html", context)


def survey_fields(questions: list[dict], posted=None, errors: dict | None = None) -> list[dict]:
    """The questionnaire's questions as the form shows them: each with what was posted (kept when the
    form comes back with problems), its choices (Likert points numbered) and its problem."""
    errors = errors or {}
    fields = []
    for q in questions:
        values = posted.getlist(q["id"]) if posted is not None else []
        choices = q.get("options") or [str(p) for p in range(1, q.get("points", 0) + 1)]
        fields.append(
            {
                "q": q,
                "name": q["id"],
                "value": values[0] if values else "",
                "values": values,
                "choices": choices if q["type"] in ("single", "multiple", "likert") else [],
                "error": errors.get(q["id"], ""),
            }
        )
    return fields


def survey_page(request, study: Study, seat: Seat, phase: str, posted=None, errors=None) -> HttpResponse:
    fields = survey_fields(surveys.questions(study, phase), posted, errors)
    context = _context(study, seat, phase=phase, fields=fields, has_errors=bool(errors))
    return render(request, "annotate/work/survey.html", context, status=400 if errors else 200)


def _posting_seat(request, study: Study) -> Seat | None:
    """The browser's seat in ``study`` when the posted form carries its worker's token."""
    seat = session_seat(request, study.uid)
    sent = request.POST.get("token", "")
    if seat is None or not constant_time_compare(sent, work_token(seat.worker_id)):
        return None
    return seat


def _no_seat(request, study: Study) -> HttpResponse:
    """A form from a browser without the seat (or with another's token): back to the entry page, which
    shows what this browser may see there; nothing is stored."""
    return redirect("work-entry", study_uid=study.uid)


@csrf_exempt  # the worker's own token is checked instead (see the module docstring)
@crowd_frameable
def consent_view(request, study_uid):
    """POST: the participant accepts (``decision=accept``) or declines the version they were shown."""
    study = get_object_or_404(Study, uid=study_uid)
    if request.method != "POST":
        return redirect("work-entry", study_uid=study.uid)
    seat = _posting_seat(request, study)
    if seat is None:
        return _no_seat(request, study)
    choice = request.POST.get("decision")
    version = request.POST.get("version", "")
    if choice not in ("accept", "decline") or not version.isdigit() or len(version) > 9:
        return redirect("work-entry", study_uid=study.uid)
    # a text changed while it was read is not decided on: the entry page shows the new version
    with suppress(ConsentStale):
        consent.decide(study, seat.worker_id, seat.ref or "", int(version), choice == "accept")
    response = redirect("work-entry", study_uid=study.uid)
    response.status_code = 303
    return response


@csrf_exempt  # the worker's own token is checked instead (see the module docstring)
@crowd_frameable
def survey_view(request, study_uid, phase: str):
    """GET: the questionnaire ``phase`` (``pre``/``post``); POST: its answers, stored once when every
    answer holds (else the form again, each problem next to its question)."""
    study = get_object_or_404(Study, uid=study_uid)
    seat = session_seat(request, study.uid) if request.method != "POST" else _posting_seat(request, study)
    if seat is None or phase not in surveys.PHASES:
        return _no_seat(request, study)
    if phase == "post" and stages.before_items(study, seat.worker_id, seat.ref or "") != stages.WORK:
        return redirect("work-entry", study_uid=study.uid)
    qs = surveys.questions(study, phase)
    if not qs or surveys.stored(study, seat.worker_id, seat.ref or "", phase) is not None:
        return redirect("work-done" if phase == "post" else "work-entry", study_uid=study.uid)
    if request.method != "POST":
        return survey_page(request, study, seat, phase)
    answers, errors = surveys.read_answers(qs, request.POST)
    if errors:
        return survey_page(request, study, seat, phase, request.POST, errors)
    stored = surveys.store_answers(study, seat.worker_id, seat.ref or "", phase, answers)
    if stored.qualified is False:
        consent.release_held(study, seat.worker_id, seat.ref or "")
    response = redirect("work-done" if phase == "post" else "work-entry", study_uid=study.uid)
    response.status_code = 303
    return response


def post_survey_url(study: Study) -> str:
    return reverse("work-survey", args=[study.uid, "post"])


@researcher_required
def study_protocol(request, uid):
    """The study's protocol as its researcher sees it: the consent text as participants will read it, the
    questions as they will be asked, the worker's controls and the time added per participant; POST
    changes the consent text (a running study's next participants get it as a new version)."""
    study = owned_or_404(Study.objects.all(), request.user, uid=uid)
    error = ""
    if request.method == "POST":
        try:
            update_consent(request.user, study, request.POST.get("consent", ""))
        except StudyInvalid as exc:
            error = "; ".join(m for ms in exc.fields.values() for m in ms)
        else:
            messages.success(request, "Consent text saved.")
            return redirect("study-protocol", uid=study.uid)
    protocol = study.protocol or {}
    context = {
        "study": study,
        "protocol": protocol,
        "consent_html": render_markdown(protocol.get("consent", "")),
        "versions": study.consent_versions.order_by("-number"),
        "pre_fields": survey_fields(surveys.questions(study, "pre")),
        "post_fields": survey_fields(surveys.questions(study, "post")),
        "added": added_seconds(protocol),
        "error": error,
        "consent_value": request.POST.get("consent", protocol.get("consent", "")),
    }
    return render(request, "annotate/studies/protocol.html", context, status=400 if error else 200)
