"""What a worker is told when the hand-out has nothing more for them: the provider's completion (a
code, the form back to the platform) only once they have done their share, otherwise what is left.

A worker has done their share when they answered, themselves, as many items as they may (the items the
kind's share rule gives one worker, one question per text in the forced-choice tasks, at most
``max_items_per_worker``: :func:`annotate.handout.assignment.worker_share`): their own answers, on their own
platform unit (:func:`annotate.handout.assignment.worker_progress`). Items that others hold or finished never count
toward it: a study full of someone else's work owes nobody a code. A worker whose answers wait for the
platform's confirmation gets a reconciliation queued for soon after they hand their unit of work back
(:func:`annotate.crowd.jobs.reconcile_soon`), and gets the completion only where the provider gives it
to an identity it has not confirmed (:meth:`~annotate.crowd.providers.base.CrowdProvider.completes_unconfirmed`:
MTurk's form, which MTurk accepts only from the assignment's holder, but not Prolific's code, which is the
same for every participant).
"""

from __future__ import annotations

from typing import Any

from annotate.crowd.jobs import reconcile_soon
from annotate.crowd.providers import get_provider
from annotate.handout.workers import Seat
from annotate.models import Assignment, Study
from annotate.quality.redundancy import share_over

UNCONFIRMED_MESSAGE = (
    "Your answers are saved, but {platform} has not confirmed your session yet, so the completion code "
    "cannot be shown. Please reload this page in a few minutes."
)


def share_done(progress: dict[str, int]) -> bool:
    """Whether a worker with ``progress`` (``done`` of ``total``: their own answers) has finished their share."""
    done, total = progress["done"], progress["total"]
    return total > 0 and done >= total


def left_state(study: Study, nothing_left: bool) -> str:
    """Why an unfinished worker gets nothing: ``closed`` (the study finished), ``full`` (no item is free
    for them now) or ``unfinished`` (items are left: they came to the done page early)."""
    if study.status == Study.Status.FINISHED:
        return "closed"
    return "full" if nothing_left else "unfinished"


def left_message(study: Study, progress: dict[str, int], nothing_left: bool) -> str:
    """What an unfinished worker is told: how many items they answered, and what they can do now."""
    done, total = progress["done"], progress["total"]
    answered = f"You have answered {done} of {total} items."
    state = left_state(study, nothing_left)
    if state == "closed":
        return f"{answered} This study has ended, so there is no completion code."
    if state == "full":
        return f"{answered} Every item is being worked on or is finished; please come back later."
    return f"{answered} Go back to the task to continue; the completion code comes when you have finished."


def completion_for(
    request, study: Study, seat: Seat, progress: dict[str, int], *, nothing_left: bool
) -> dict[str, Any]:
    """The completion the done page and the annotator API show: the provider's when the worker's share is
    done (``finished`` true, ``state`` "done"), else a message saying what is left (``finished`` false, no
    code, ``state`` as :func:`left_state` says, or "unconfirmed" while the platform must still vouch for
    the worker)."""
    # An adaptive study whose every other item stopped has no more for this worker: their share is done.
    over = nothing_left and progress["done"] > 0 and share_over(study, seat.worker_id)
    if not share_done(progress) and not over:
        return {
            "finished": False,
            "state": left_state(study, nothing_left),
            "message": left_message(study, progress, nothing_left),
        }
    provider = get_provider(study.provider)
    if provider.platform and not seat.verified:
        reconcile_soon(study)
        if not provider.completes_unconfirmed(request, study, seat):
            return {
                "finished": False,
                "state": "unconfirmed",
                "message": UNCONFIRMED_MESSAGE.format(platform=provider.title),
            }
    # An unsaved assignment names the study and worker, whatever route this is (the submit route has none).
    return {
        "finished": True,
        "state": "done",
        **provider.completion(request, Assignment(study=study, worker_id=seat.worker_id)),
    }
