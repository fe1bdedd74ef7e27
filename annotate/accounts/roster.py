"""The account lists of the admin's accounts page, a page at a time: researchers and admins, annotator
accounts (signed-in people without a role) with the studies they worked in, and the local crowd's invited
workers with their study and state. Each list is ordered by an indexed column (the unique account name,
the invite's id) and each page costs a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet

from annotate.access import ADMIN_GROUP, RESEARCHER_GROUP
from annotate.crowd.providers.local.adapter import NAME as LOCAL
from annotate.crowd.providers.local.adapter import invite_ref, invite_state
from annotate.models import Assignment, EntryBinding, Invite

User = get_user_model()
PER_PAGE = 25
#: The lists of the page, by their ``?show=`` value.
LISTS = {
    "researchers": "Researchers and admins",
    "annotators": "Annotator accounts",
    "invites": "Invited workers",
}


@dataclass
class Row:
    """One line of a list: the account or invite, and what the page says of it."""

    obj: Any
    role: str = ""
    state: str = ""
    studies: list[Any] = field(default_factory=list)


def _roles() -> Q:
    return Q(is_superuser=True) | Q(groups__name__in=[RESEARCHER_GROUP, ADMIN_GROUP])


def researchers() -> QuerySet:
    return User.objects.filter(pk__in=User.objects.filter(_roles()).values("pk")).order_by("username")


def annotator_accounts() -> QuerySet:
    return User.objects.exclude(pk__in=User.objects.filter(_roles()).values("pk")).order_by("username")


def page_of(kind: str, number: Any) -> tuple[Page, list[Row]]:
    """Page ``number`` (any input; out of range gives the nearest page) of the list ``kind``
    (a key of :data:`LISTS`), with its rows."""
    if kind == "invites":
        page = Paginator(Invite.objects.select_related("study").order_by("-id"), PER_PAGE).get_page(number)
        return page, _invite_rows(list(page.object_list))
    source = researchers() if kind == "researchers" else annotator_accounts()
    page = Paginator(source.prefetch_related("groups"), PER_PAGE).get_page(number)
    users = list(page.object_list)
    if kind == "researchers":
        return page, [Row(u, role=_role(u), state=_state(u)) for u in users]
    studies: dict[int, list[Any]] = {}
    worked = Assignment.objects.filter(worker__user__in=users).values_list(
        "worker__user_id", "study__uid", "study__name"
    )
    for user_id, uid, name in worked.distinct().order_by("worker__user_id", "study__name"):
        studies.setdefault(user_id, []).append({"uid": uid, "name": name})
    return page, [Row(u, role="annotator", state=_state(u), studies=studies.get(u.pk, [])) for u in users]


def _invite_rows(invites: list[Invite]) -> list[Row]:
    refs = [invite_ref(i.study, i.invitee) for i in invites]
    used = set(EntryBinding.objects.filter(provider=LOCAL, ref__in=refs).values_list("ref", flat=True))
    return [Row(i, role="invitee", state=invite_state(i, used), studies=[i.study]) for i in invites]


def _role(user) -> str:
    names = {g.name for g in user.groups.all()}
    return "admin" if user.is_superuser or ADMIN_GROUP in names else "researcher"


def _state(user) -> str:
    if not user.is_active:
        return "deactivated"
    return "active" if user.has_usable_password() else "password not set"
