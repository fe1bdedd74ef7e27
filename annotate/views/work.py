"""Annotator pages: the study entry ``/w/<study_uid>/`` and the completion page.

The entry page asks the study's provider who the visitor is, remembers the worker in a signed cookie
(:mod:`annotate.workers`) and serves the task kind's page template with ``task_json`` (rendered with
``json_script`` as ``hatlab-task``): the URLs of the annotator API, the CSRF token and the public study config. A
visitor the provider cannot identify (an MTurk preview, no invite) sees the instructions only.
"""

from __future__ import annotations

import uuid

from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from annotate import throttle
from annotate.models import Study, Worker
from annotate.providers import get_provider, identify_worker
from annotate.tasks import get_kind
from annotate.views.framing import crowd_frameable
from annotate.workers import current_worker, remember_worker, work_token

ASSIGNMENT_PLACEHOLDER = "ASSIGNMENT"
_SAMPLE_UID = uuid.UUID(int=0)


def task_json(request, study: Study, worker: Worker | None = None) -> dict:
    """What the task page's script needs (no secrets: only the public config). The CSRF token is the
    worker's own (:func:`annotate.workers.work_token`), which works in a crowd platform's frame too."""
    kind = get_kind(study.kind)
    submit_url = reverse("api-work-submit", args=[_SAMPLE_UID]).replace(
        str(_SAMPLE_UID), ASSIGNMENT_PLACEHOLDER
    )
    return {
        "study": str(study.uid),
        "kind": kind.name,
        "next_url": reverse("api-work-next", args=[study.uid]),
        "submit_url_template": submit_url,
        "done_url": reverse("work-done", args=[study.uid]),
        "csrf_token": get_token(request) if worker is None else work_token(worker.pk),
        "config": kind.public_config(study),
    }


def too_many_new_workers(request, study: Study):
    """A 429 page when this address has brought too many new workers to ``study`` lately, else ``None``
    (a browser that already has its worker in the study is not counted)."""
    if current_worker(request, study) is not None:
        return None
    wait = throttle.new_worker(request, study.uid)
    if wait is None:
        return None
    response = render(request, "annotate/work/closed.html", {"study": study, "reason": "busy"}, status=429)
    response["Retry-After"] = str(wait)
    return response


@crowd_frameable
def entry(request, study_uid):
    study = get_object_or_404(Study, uid=study_uid)
    if (refused := too_many_new_workers(request, study)) is not None:
        return refused
    kind = get_kind(study.kind)
    worker = identify_worker(request, study) or current_worker(request, study)
    base = {"study": study, "config": kind.public_config(study), "provider": get_provider(study.provider)}
    if worker is None:
        return render(request, "annotate/work/preview.html", base)
    if worker.status == Worker.Status.BLOCKED:
        return render(request, "annotate/work/closed.html", {**base, "reason": "blocked"}, status=403)
    if study.status == Study.Status.FINISHED:
        response = redirect("work-done", study_uid=study.uid)
    elif study.status != Study.Status.RUNNING:
        response = render(request, "annotate/work/closed.html", {**base, "reason": study.status})
    else:
        response = render(
            request, kind.template, {**base, "kind": kind, "task_json": task_json(request, study, worker)}
        )
    remember_worker(request, response, study, worker)
    return response


@crowd_frameable
def done(request, study_uid):
    study = get_object_or_404(Study, uid=study_uid)
    worker = current_worker(request, study)
    completion = get_provider(study.provider).completion(request, worker) if worker is not None else None
    return render(request, "annotate/work/done.html", {"study": study, "completion": completion})
