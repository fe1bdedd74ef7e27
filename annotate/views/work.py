"""Annotator pages: the study entry ``/w/<study_uid>/`` and the completion page.

The entry page asks the study's provider who the visitor is and whether it vouches for them
(:func:`annotate.crowd.providers.admit`; a refused visitor gets a plain 403 page saying why; an invite not yet
started gets a start page whose button POSTs back, so a link preview binds nothing), remembers the
worker's seat in a signed cookie (:mod:`annotate.handout.workers`) and serves the task kind's page template with
``task_json`` (rendered with ``json_script`` as ``hatlab-task``): the URLs of the annotator API, the CSRF
token and the public study config (each item's page token comes with the item from the annotator API:
:mod:`annotate.handout.page_tokens`). A visitor the provider cannot identify (an MTurk preview, no invite) sees
the instructions only. The completion page shows the provider's completion (a code, the form back to the
platform) only to a worker who has done their share (:mod:`annotate.crowd.completion`).
"""

from __future__ import annotations

import uuid

from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from annotate.crowd.completion import completion_for
from annotate.crowd.providers import admit, get_provider
from annotate.crowd.providers.local.adapter import WITHDRAWN, revoked_seats
from annotate.handout.assignment import held_assignment, work_left, worker_progress
from annotate.handout.workers import Seat, remember_worker, session_seat, work_token
from annotate.infra import throttle
from annotate.models import Item, Study, Worker
from annotate.protocol import stages
from annotate.protocol.controls import back_allowed, skip_reasons
from annotate.quality.exclusion import is_blocked
from annotate.tasks import get_kind
from annotate.views.framing import crowd_frameable
from annotate.views.protocol import post_survey_url, stage_page

ASSIGNMENT_PLACEHOLDER = "ASSIGNMENT"
_SAMPLE_UID = uuid.UUID(int=0)


def task_json(request, study: Study, worker: Worker | None = None) -> dict:
    """What the task page's script needs (no secrets: only the public config). For ``worker`` the CSRF
    token is the worker's own
    (:func:`annotate.handout.workers.work_token`), which works in a crowd platform's frame too."""
    kind = get_kind(study.kind)
    django_token = get_token(request)  # sets the CSRF cookie, which same-site clients may use instead
    submit_url = reverse("api-work-submit", args=[_SAMPLE_UID]).replace(
        str(_SAMPLE_UID), ASSIGNMENT_PLACEHOLDER
    )
    return {
        "study": str(study.uid),
        "kind": kind.name,
        "next_url": reverse("api-work-next", args=[study.uid]),
        "submit_url_template": submit_url,
        "done_url": reverse("work-done", args=[study.uid]),
        "csrf_token": work_token(worker.pk) if worker is not None else django_token,
        "config": kind.public_config(study),
        "protocol": controls_json(study),
    }


def controls_json(study: Study) -> dict:
    """The worker's controls the study allows, for the task page: skip reasons, going back, and their
    API routes."""
    reasons = skip_reasons(study)
    return {
        "skip_reasons": reasons,
        "back": back_allowed(study),
        "skip_url_template": reverse("api-work-skip", args=[_SAMPLE_UID]).replace(
            str(_SAMPLE_UID), ASSIGNMENT_PLACEHOLDER
        ),
        "edit_url_template": reverse("api-work-edit", args=[_SAMPLE_UID]).replace(
            str(_SAMPLE_UID), ASSIGNMENT_PLACEHOLDER
        ),
        "previous_url": reverse("api-work-previous", args=[study.uid]),
    }


TRAINING_MODE = "training"


def training_task_json(task: dict, study: Study) -> dict:
    """The task page's configuration for the training phase: the same page and widget, its ``next`` and
    ``submit`` the training's (:mod:`annotate.api.work_training`), no skip or back."""
    answer = reverse("api-work-training-answer", args=[study.uid, 999_999_999])
    return {
        **task,
        "mode": TRAINING_MODE,
        "next_url": reverse("api-work-training-next", args=[study.uid]),
        "submit_url_template": answer.replace("999999999", ASSIGNMENT_PLACEHOLDER),
        "protocol": None,
    }


def too_many_new_workers(request, study: Study):
    """A 429 page when this address has brought too many new worker identities to ``study`` lately, else
    ``None``. Every identity the request names counts unless it is the seat this browser already holds in
    the study: a browser that keeps its worker cookie and names another worker id or platform unit each
    time is counted each time (re-entering on the cookie alone names nobody new)."""
    seat = session_seat(request, study.uid)
    if seat is not None and _holds_named_identity(request, study, seat):
        return None
    wait = throttle.new_worker(request, study.uid)
    if wait is None:
        return None
    response = render(request, "annotate/work/closed.html", {"study": study, "reason": "busy"}, status=429)
    response["Retry-After"] = str(wait)
    return response


def _holds_named_identity(request, study: Study, seat: Seat) -> bool:
    """Whether the identity the request names (if any) is the one ``seat`` holds: the same worker id on
    the same platform unit."""
    provider = get_provider(study.provider)
    external_id = provider.identify(request, study)
    if not external_id:
        return True
    if (seat.ref or "") != provider.claimed_ref(request):
        return False
    return Worker.objects.filter(pk=seat.worker_id, provider=provider.name, external_id=external_id).exists()


def sample_item(study: Study) -> Item | None:
    """An item to preview: the study's first ordinary item, else (a draft) the first its kind would
    make. Only its public payload is shown."""
    item = Item.objects.filter(study=study, is_gold=False).order_by("position", "id").first()
    if item is not None:
        return item
    built = get_kind(study.kind).build_items(study)
    return next((i for i in built if not i.is_gold), built[0] if built else None)


def sample_page(request, study: Study, message: str = "", back: tuple[str, str] | None = None):
    """The kind's task page with a sample item that sends nothing (``None`` when there is no item):
    the researcher's preview, and a crowd platform's preview of the task before a worker accepts it.
    ``back`` (a link and its words) marks the page a researcher's preview: a banner says that answers are
    not stored and leads back."""
    kind = get_kind(study.kind)
    item = sample_item(study)
    if item is None:
        return None
    task = task_json(request, study)
    task["sample"] = {
        "assignment": "",
        "item": {"kind": kind.name, "payload": kind.public_payload(item)},
        "progress": {"done": 0, "total": 1},
        "config": kind.public_config(study),
        **({"message": message} if message else {}),
    }
    context = {
        "study": study,
        "config": kind.public_config(study),
        "provider": get_provider(study.provider),
        "kind": kind,
        "task_json": task,
        "researcher_preview": {"url": back[0], "label": back[1]} if back else None,
    }
    return render(request, kind.template, context)


@csrf_exempt  # the start button's POST: it may come from a platform's frame, where no CSRF cookie is sent;
# forging it could only tie an invite the forger already holds to the victim's browser
@crowd_frameable
def entry(request, study_uid):
    """The study's entry: GET shows the task page to an admitted worker (an invite not yet started gets the
    start page, and binds nothing: a link preview does not take the invite); POST is the invitee's start."""
    study = get_object_or_404(Study, uid=study_uid)
    may_create = get_provider(study.provider).may_create_worker(request)
    if may_create and (refused := too_many_new_workers(request, study)) is not None:
        return refused
    kind = get_kind(study.kind)
    admission = admit(request, study)
    base = {"study": study, "config": kind.public_config(study), "provider": get_provider(study.provider)}
    if admission is not None and admission.entry.start:
        return render(request, "annotate/work/start.html", base)
    if admission is not None and admission.worker is None:
        refused = {**base, "reason": "refused", "refusal": admission.entry.refused}
        return render(request, "annotate/work/closed.html", refused, status=403)
    if (
        admission is not None and request.method == "POST"
    ):  # started: the page comes by GET, on the seat cookie
        response = redirect("work-entry", study_uid=study.uid)
        response.status_code = 303
        remember_worker(
            request, response, study, admission.worker, admission.entry.ref, admission.entry.verified
        )
        return response
    if admission is not None:
        seat: Seat | None = Seat(admission.worker.pk, admission.entry.ref, admission.entry.verified)
        worker = admission.worker
    else:
        seat = session_seat(request, study.uid)
        if seat is not None and revoked_seats({str(study.uid): seat}):
            refusal = {**base, "reason": "refused", "refusal": WITHDRAWN}
            return render(request, "annotate/work/closed.html", refusal, status=403)
        worker = None if seat is None else Worker.objects.filter(pk=seat.worker_id).first()
    if seat is None or worker is None:
        provider = base["provider"]
        if provider.is_preview(request, study) and study.status == Study.Status.RUNNING:
            accept = f"This is a preview with a sample item. Accept the task on {provider.title} to start."
            if (sample := sample_page(request, study, accept)) is not None:
                return sample
        return render(request, "annotate/work/preview.html", base)
    if is_blocked(study, worker.pk):
        return render(request, "annotate/work/closed.html", {**base, "reason": "blocked"}, status=403)
    if study.status == Study.Status.FINISHED:
        response = redirect("work-done", study_uid=study.uid)
    elif study.status != Study.Status.RUNNING and not (
        study.status == Study.Status.PAUSED and held_assignment(study, worker.pk, seat.ref or "") is not None
    ):  # a paused study still lets a worker finish the item they hold
        response = render(request, "annotate/work/closed.html", {**base, "reason": study.status})
    elif (stage := stages.before_items(study, worker.pk, seat.ref or "")) == stages.TRAINING:
        task = training_task_json(task_json(request, study, worker), study)
        response = render(request, kind.template, {**base, "kind": kind, "task_json": task})
    elif stage != stages.WORK:
        response = stage_page(request, study, seat, stage)  # consent, questions or the way out first
    else:
        response = render(
            request, kind.template, {**base, "kind": kind, "task_json": task_json(request, study, worker)}
        )
    remember_worker(request, response, study, worker, seat.ref or "", seat.verified)
    return response


@crowd_frameable
def done(request, study_uid):
    study = get_object_or_404(Study, uid=study_uid)
    seat = session_seat(request, study.uid)
    completion = None
    if seat is not None and (stage := stages.before_items(study, seat.worker_id, seat.ref or "")) in (
        stages.LEFT
    ):
        return stage_page(request, study, seat, stage)  # not a participant: no completion
    if seat is not None:
        nothing_left = study.status == Study.Status.FINISHED or not work_left(
            study, seat.worker_id, seat.ref or ""
        )
        progress = worker_progress(study, seat.worker_id, seat.ref or "")
        completion = completion_for(request, study, seat, progress, nothing_left=nothing_left)
        if completion.get("finished") and stages.post_survey_pending(study, seat.worker_id, seat.ref or ""):
            return redirect(post_survey_url(study))
    return render(request, "annotate/work/done.html", {"study": study, "completion": completion})
