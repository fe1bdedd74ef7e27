"""The local provider: in-house annotators with signed invite links or their own accounts.

An invite link carries a token made by :func:`django.core.signing.dumps` (HMAC with the secret key,
timestamped) naming the study and an invitee; it is valid for the study's ``invite_max_age_s``
(:mod:`annotate.crowd.providers.local.settings`) and belongs to the first account (or, signed out, the first
browser) that *starts* it: opening the link (a GET, as a chat or mail client's link preview does) shows a start
page and binds nothing; the invitee's press of its button (a POST with the CSRF token) binds the invite.
Anyone else opening the same link afterwards is refused. Without ``open_enrollment`` a study
is invite-only, for signed-in accounts too; with it, a signed-in account is its own identity and any
other visitor gets an anonymous identity kept in their session. Every invite made is stored
(:class:`~annotate.models.Invite`): the study page lists it as unused, used or revoked; a revoked one
is refused at the entry page, and the browser that held it loses its seat at once (:func:`revoked_seats`: the
annotator API and the entry page stop serving it). A token made before invites were stored has no row and stays valid.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Mapping
from typing import Any

from django.core import signing
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from annotate.crowd.providers import PROVIDERS
from annotate.crowd.providers.base import CrowdProvider, Entry
from annotate.crowd.providers.local.settings import LocalSettings
from annotate.infra import sql
from annotate.infra.sql import Prepared
from annotate.models import EntryBinding, Invite, Study, Worker

NAME = Invite.PROVIDER
INVITE_SALT = "hatlab.invite"
INVITE_PARAM = "invite"
ANON_SESSION_KEY = "hatlab_anonymous"
BROWSER_SESSION_KEY = "hatlab_browser"
WITHDRAWN = "This invite link was withdrawn by the research team."


def make_invite(study, invitee: str | None = None, created_by=None) -> str:
    """A signed, timestamped invite token for ``study``; ``invitee`` defaults to a random name. The
    invite is stored (:class:`~annotate.models.Invite`) so it can be listed and revoked; asking again
    for a stored invitee hands out the stored token."""
    invitee = invitee or secrets.token_hex(8)
    stored = Invite.objects.filter(study=study, invitee=invitee).first()
    if stored is not None:
        return stored.token
    token = signing.dumps({"s": str(study.uid), "i": invitee}, salt=INVITE_SALT)
    Invite.objects.create(study=study, invitee=invitee, token=token, created_by=created_by)
    return token


def revoke_invite(invite: Invite) -> bool:
    """Revoke ``invite``: the entry page refuses it from now on and the browser holding it loses its seat
    (:func:`revoked_seats`); answers already given stay. ``False`` when it already was revoked."""
    return bool(
        Invite.objects.filter(pk=invite.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    )


def invite_state(invite: Invite, used: set[str]) -> str:
    """``revoked``, ``used`` (an account or browser holds it) or ``unused``; ``used`` holds the refs of
    the study's bound invites (:func:`used_invites`)."""
    if invite.revoked_at is not None:
        return Invite.State.REVOKED
    return Invite.State.USED if invite_ref(invite.study, invite.invitee) in used else Invite.State.UNUSED


def invite_ref(study, invitee: str) -> str:
    """The :class:`~annotate.models.EntryBinding` ref of an invite once someone used it."""
    return f"{study.uid}:invite:{invitee}"


def used_invites(study) -> set[str]:
    return set(EntryBinding.objects.filter(study=study, provider=NAME).values_list("ref", flat=True))


_REVOKED = Prepared(
    "hatlab_revoked_invites",
    ("uuid[]",),
    f"""SELECT s.uid, v.invitee FROM {Invite._meta.db_table} v JOIN {Study._meta.db_table} s ON s.id = v.study_id
        WHERE s.uid = ANY($1) AND v.revoked_at IS NOT NULL""",
)


def _revoked_invites(study_uids: list[str]) -> list[tuple[str, str]]:
    """``(study uid, invitee)`` of the revoked invites of these studies: a prepared statement on PostgreSQL
    (this runs on every annotator request of an invitee), the ORM elsewhere."""
    if not sql.native():
        rows = Invite.objects.filter(revoked_at__isnull=False, study__uid__in=study_uids)
        return [(str(uid), invitee) for uid, invitee in rows.values_list("study__uid", "invitee")]
    with connection.cursor() as cursor:
        _REVOKED.execute(cursor, ["{" + ",".join(str(uuid.UUID(uid)) for uid in study_uids) + "}"])
        return [(str(uid), invitee) for uid, invitee in cursor.fetchall()]


def revoked_seats(seats: Mapping[str, Any]) -> set[str]:
    """The study uids among ``seats`` (``{study uid: seat with worker_id and ref}``) whose seat is a revoked
    invite's. A platform's seat (it carries the platform's unit, ``ref``) is never an invite's: no query for
    those; for the others one query when no invite of their studies is revoked (the common case), two
    otherwise."""
    local = {uid: seat for uid, seat in seats.items() if not getattr(seat, "ref", "")}
    if not local:
        return set()
    revoked = _revoked_invites(list(local))
    if not revoked:
        return set()
    external = dict(
        Worker.objects.filter(pk__in=[s.worker_id for s in local.values()], provider=NAME).values_list(
            "pk", "external_id"
        )
    )
    return {
        uid
        for uid, invitee in revoked
        if uid in local and external.get(local[uid].worker_id) == f"{Invite.WORKER_PREFIX}{invitee}"
    }


def invite_path(study, token: str) -> str:
    """The entry-page path (with query string) an invite token opens."""
    return f"{reverse('work-entry', args=[study.uid])}?{INVITE_PARAM}={token}"


def read_invite(study, token: str) -> str | None:
    """The invitee named by ``token`` if it is genuine, unexpired and made for ``study``."""
    max_age = LocalSettings.from_dict(study.provider_config).invite_max_age_s
    try:
        data = signing.loads(token, salt=INVITE_SALT, max_age=max_age)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or data.get("s") != str(study.uid) or not isinstance(data.get("i"), str):
        return None
    return data["i"]


class LocalProvider(CrowdProvider):
    name = NAME
    title = "Local (invite links and accounts)"

    invites = True

    def validate_config(self, config: Any) -> dict[str, Any]:
        LocalSettings.from_dict(config)
        return {} if config is None else dict(config)

    def open_enrollment(self, study) -> bool:
        return LocalSettings.from_dict(study.provider_config).open_enrollment

    def may_create_worker(self, request) -> bool:
        """A GET of an invite link shows the start page or the holder's own seat: it never makes a worker."""
        return request.method == "POST" or INVITE_PARAM not in request.GET

    def identify(self, request, study) -> str | None:
        token = request.GET.get(INVITE_PARAM)
        if token:
            invitee = read_invite(study, token)
            return None if invitee is None else f"{Invite.WORKER_PREFIX}{invitee}"
        if not LocalSettings.from_dict(study.provider_config).open_enrollment:
            return None
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            return f"user:{user.pk}"
        anonymous = request.session.get(ANON_SESSION_KEY)
        if not isinstance(anonymous, str):
            anonymous = request.session[ANON_SESSION_KEY] = secrets.token_hex(12)
        return f"anon:{anonymous}"

    def verify_entry(self, request, study, external_id: str) -> Entry:
        """A revoked invite is refused. An invite is bound to the first account that starts it (a POST; signed
        out: the first browser, by a token in its session); a GET of an unbound invite asks to start and binds
        nothing; another account or browser opening a bound one is refused. Accounts and anonymous
        visitors of an open study need no check."""
        if not external_id.startswith(Invite.WORKER_PREFIX):
            return Entry()
        browser = request.session.get(BROWSER_SESSION_KEY)
        if not isinstance(browser, str):
            browser = request.session[BROWSER_SESSION_KEY] = secrets.token_hex(12)
        holders = [f"browser:{browser}"]
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            holders.insert(0, f"user:{user.pk}")
        invitee = external_id.removeprefix(Invite.WORKER_PREFIX)
        if Invite.objects.filter(study=study, invitee=invitee, revoked_at__isnull=False).exists():
            return Entry.refuse(WITHDRAWN)
        if request.method == "POST":  # the invitee's explicit start
            binding, _ = EntryBinding.objects.get_or_create(
                provider=self.name,
                ref=invite_ref(study, invitee),
                defaults={"study": study, "holder": holders[0]},
            )
        else:  # a look at the link binds nothing
            found = EntryBinding.objects.filter(provider=self.name, ref=invite_ref(study, invitee)).first()
            if found is None:
                return Entry(start=True)
            binding = found
        if binding.holder not in holders:
            return Entry.refuse("This invite link was already used by someone else. Ask for your own link.")
        return Entry()

    def worker_defaults(self, request, study, external_id: str) -> dict[str, Any]:
        if external_id.startswith("user:"):
            return {"user": request.user}
        return {}

    def completion(self, request, assignment_or_worker) -> dict[str, Any]:
        return {"message": "Thank you! You have finished all items available to you in this study."}


PROVIDERS.add(NAME, LocalProvider(), settings=LocalSettings, bonuses=False, blocks=False)
