"""Worker and platform ids as one researcher's exports name them: keyed hashes, per researcher
(:func:`annotate.models.crowd.pseudonym`)."""

from __future__ import annotations

from annotate.models.crowd import pseudonym

__all__ = ["AnonymousIds", "platform_pseudonym"]


def platform_pseudonym(owner_id: int | None, provider: str, external_id: str) -> str:
    """A platform's id of a unit of work, hashed per researcher as worker ids are
    (:func:`annotate.models.crowd.pseudonym`); empty for none."""
    if not external_id:
        return ""
    return pseudonym(owner_id, f"{provider}:unit", external_id, prefix="a")


class AnonymousIds(dict):
    """``(provider, external_id)`` → the worker's pseudonym for the researcher ``owner_id``, computed once
    per worker."""

    def __init__(self, owner_id: int | None):
        super().__init__()
        self.owner_id = owner_id

    def __missing__(self, key: tuple[str, str]) -> str:
        value = self[key] = pseudonym(self.owner_id, key[0], key[1])
        return value
