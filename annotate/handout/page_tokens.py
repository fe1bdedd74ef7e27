"""The task page's proof that it was served an item: a signed token bound to one study, one worker, one
assignment (the item) and the moment it was served.

The annotator API's ``next`` answer (:func:`annotate.api.work.next_body`) carries :func:`page_token` with
each item it hands out, or hands back; the page's script sends it back in ``signals.page_token`` with
that item's answer, and the submission records :func:`page_token_valid`'s verdict as ``signals["page"]``
(the server's: a ``page`` the client sends is overwritten, never trusted, and so is every other field the
server owns, :data:`SERVER_SIGNALS`). The token is signed with the site's secret key
(:mod:`django.core.signing`, salted), so it cannot be made up or edited, and it holds only for the
assignment it was served with and only until the study's time on an item has passed since it was
served (with :data:`SLACK_S` for a slow network): one token copied out of a page opens no other item,
no other worker's work, and no later session. An answer without a valid token came from a client that
was never served that item. A client that asks ``next`` itself, as the page does, gets each item's token
like the page: the interaction counts and the timing floors are the next evidence, and
:mod:`annotate.quality.risk` says what none of them can see.
"""

from __future__ import annotations

import time
from typing import Any

from django.core import signing

_SALT = "hatlab.page.item"
SLACK_S = 300
#: Signal fields only the server writes: the page verdict, the token (never stored), and whether the
#: answer was recovered from a crowd platform's copy (set by reconciliation alone).
SERVER_SIGNALS = frozenset({"page", "page_token", "recovered"})


def page_token(study_uid: Any, worker_id: int, assignment_uid: Any, served_at: float | None = None) -> str:
    """A token naming ``study_uid``, ``worker_id`` and ``assignment_uid``, served at ``served_at`` (a Unix
    time; now by default), signed."""
    served = time.time() if served_at is None else served_at
    return signing.dumps([str(study_uid), int(worker_id), str(assignment_uid), round(served, 3)], salt=_SALT)


def page_token_valid(
    token: Any,
    study_uid: Any,
    worker_id: int | None,
    assignment_uid: Any,
    time_limit_s: int,
    now: float | None = None,
) -> bool:
    """Whether ``token`` was served with this assignment of this study and worker, no earlier than
    ``time_limit_s`` (the study's time on an item) plus :data:`SLACK_S` before ``now`` (``False`` for
    anything else)."""
    if not isinstance(token, str) or not token or worker_id is None:
        return False
    try:
        value = signing.loads(token, salt=_SALT)
    except signing.BadSignature:
        return False
    if not isinstance(value, list) or len(value) != 4 or not isinstance(value[3], int | float):
        return False
    if value[:3] != [str(study_uid), int(worker_id), str(assignment_uid)]:
        return False
    return (time.time() if now is None else now) - value[3] <= time_limit_s + SLACK_S
