"""Who changed what: blocks, unblocks and lexicon changes, each with the person who made it (none for
the quality policy acting on its own) and when."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ChangeLog(models.Model):
    """One change to what decides whose work counts or how it is read."""

    class Action(models.TextChoices):
        BLOCK = "block", "Blocked a worker"
        UNBLOCK = "unblock", "Unblocked a worker"
        LEXICON = "lexicon", "Replaced an opinion lexicon"

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="changes_made",
        help_text="Who made the change; empty: the study's quality policy.",
    )
    action = models.CharField(max_length=20, choices=Action.choices)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="changes_to",
        help_text="Whose block or lexicon changed; empty: the site's.",
    )
    target = models.CharField(max_length=200, help_text="The worker's pseudonym, or the lexicon changed.")
    detail = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.action} {self.target} by {self.actor_id or 'policy'}"


def record(actor, action: str, target: str, owner_id: int | None, **detail) -> ChangeLog:
    """Log one change; ``actor`` is the user who made it (None or an anonymous user: the quality policy)."""
    actor_id = actor.pk if actor is not None and getattr(actor, "is_authenticated", False) else None
    return ChangeLog.objects.create(
        actor_id=actor_id, action=action, target=target, owner_id=owner_id, detail=detail
    )
