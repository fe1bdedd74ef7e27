"""Annotator pages: the study entry ``/w/<study_uid>/`` and the completion page.

The entry page asks the study's provider who the visitor is, remembers the worker in a signed cookie
(:mod:`annotate.workers`) and serves the task kind's page template with ``task_json`` (rendered with
``json_script`` as ``hatlab-task``): the URLs of the annotator API, the CSRF token, the public study config
and the page token the page sends back with each answer (:mod:`annotate.page_tokens`). A
visitor the provider cannot identify (an MTurk preview, no invite) sees the instructions only.
"""

from __future__ import annotations

import uuid

from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from annotate.models import Study, Worker
from annotate.page_tokens import page_token
from annotate.providers import get_provider, identify_worker
from annotate.tasks import get_kind
from annotate.views.framing import crowd_frameable
from annotate.workers import current_worker, remember_worker

ASSIGNMENT_PLACEHOLDER = "ASSIGNMENT"
_SAMPLE_UID = uuid.UUID(int=0)


def task_json(request, study: Study, worker: Worker | None = None) -> dict:
    """What the task page's script needs (no secrets: only the public config, and for ``worker`` the
    token that proves the page was loaded for them)."""
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
        "csrf_token": get_token(request),
        "config": kind.public_config(study),
        "page_token": page_token(study.uid, worker.pk) if worker is not None else None,
    }


@crowd_frameable
def entry(request, study_uid):
    study = get_object_or_404(Study, uid=study_uid)
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
