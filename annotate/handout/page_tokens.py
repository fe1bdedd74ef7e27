"""The task page's proof that it was loaded: a signed token bound to one study and one worker.

The entry page (:func:`annotate.views.work.task_json`) puts :func:`page_token` into the page's
configuration; the page's script sends it back in ``signals.page_token`` with every answer, and the
submission records :func:`page_token_valid`'s verdict as ``signals["page"]`` (a boolean the client
sends under that name is overwritten, never trusted). The token is signed with the site's secret key
(:mod:`django.core.signing`, salted, time-stamped), so it cannot be made up, edited, or moved to
another study or worker, and it expires with the session. An answer without it came from a client
that never received the task page for that study and worker. A client that fetches the page's HTML
and copies the token out of it passes this check: the interaction counts are the next evidence.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import signing

_SALT = "hatlab.page"


def page_token(study_uid: Any, worker_id: int) -> str:
    """A token naming ``study_uid`` and ``worker_id``, signed and time-stamped."""
    return signing.dumps([str(study_uid), int(worker_id)], salt=_SALT)


def page_token_valid(token: Any, study_uid: Any, worker_id: int | None) -> bool:
    """Whether ``token`` is a current token of this study and worker (``False`` for anything else)."""
    if not isinstance(token, str) or not token or worker_id is None:
        return False
    try:
        value = signing.loads(token, salt=_SALT, max_age=settings.SESSION_COOKIE_AGE)
    except signing.BadSignature:
        return False
    return value == [str(study_uid), int(worker_id)]
