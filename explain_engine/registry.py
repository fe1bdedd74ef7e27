"""One registry type for every family of plug-ins: task kinds, crowd providers, explainers, jobs, metrics.

A :class:`Registry` maps a required name to an entry and keeps metadata beside it. It refuses a second
entry under a name it already holds, and an unknown name is answered with the names it knows, so a typo
in a study config or on the command line says what would have worked::

    METRICS = Registry("metric")

    @METRICS.register("fleiss_kappa", kind="agreement")
    def fleiss_kappa(...): ...

    METRICS["fleiss_kappa"]            # the function
    METRICS.meta("fleiss_kappa")       # {"kind": "agreement"}
    METRICS["fleiss"]                  # UnknownName: unknown metric 'fleiss'; known: fleiss_kappa

:func:`discover` imports every public module of a package once, which is how plug-in folders register
their entries without a hand-kept list.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError, ValueError):
    """A name that is not registered; the message lists the registered names.

    It is a ``KeyError`` (a registry is a mapping) and a ``ValueError`` (the name is usually user input).
    """

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DuplicateName(ValueError):
    """A second entry under a name that is already registered."""


class Registry(Mapping[str, T], Generic[T]):
    """Named entries of one family, each with a metadata mapping.

    ``noun`` names the family in error messages ("task kind", "explanation method").
    """

    def __init__(self, noun: str) -> None:
        self.noun = noun
        self._entries: dict[str, T] = {}
        self._meta: dict[str, Mapping[str, Any]] = {}

    # -- registering -------------------------------------------------------------------------------
    def add(self, name: str, entry: T, **meta: Any) -> T:
        """Register ``entry`` under ``name`` with ``meta``; a missing or taken name is refused."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.noun} needs a non-empty name, got {name!r}")
        if name in self._entries:
            raise DuplicateName(f"{self.noun} {name!r} is already registered")
        self._entries[name] = entry
        self._meta[name] = MappingProxyType(dict(meta))
        return entry

    def register(self, name: str, **meta: Any) -> Callable[[T], T]:
        """Decorator form of :meth:`add`; returns the decorated object unchanged."""

        def decorate(entry: T) -> T:
            self.add(name, entry, **meta)
            return entry

        return decorate

    # -- reading -----------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(self.unknown(name)) from None

    def unknown(self, name: object) -> str:
        """The message for an unknown ``name``: what was asked and what is known."""
        known = ", ".join(sorted(self._entries)) or "none"
        return f"unknown {self.noun} {name!r}; known: {known}"

    def meta(self, name: str) -> Mapping[str, Any]:
        """The metadata registered with ``name`` (read-only)."""
        self[name]
        return self._meta[name]

    def where(self, **conditions: Any) -> list[str]:
        """Names whose metadata equals every given condition, in registration order."""
        return [
            name
            for name, meta in self._meta.items()
            if all(meta.get(key) == value for key, value in conditions.items())
        ]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __repr__(self) -> str:
        return f"<Registry of {len(self)} {self.noun}s: {', '.join(self._entries)}>"


def discover(package: str, *, skip: tuple[str, ...] = ()) -> list[str]:
    """Import every public module and sub-package of ``package`` (names not starting with ``_``).

    Returns the imported module names, sorted, so discovery is the same on every machine.
    """
    root = importlib.import_module(package)
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(root.__path__)
        if not info.name.startswith("_") and info.name not in skip
    )
    for name in names:
        importlib.import_module(f"{package}.{name}")
    return names


__all__ = ["DuplicateName", "Registry", "UnknownName", "discover"]
