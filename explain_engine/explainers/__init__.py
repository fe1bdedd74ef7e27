"""Explanation methods: one module per family, all registered in :mod:`.registry`.

Importing this package imports every method module in it, so that the registry is complete.
``explain(bundle, texts, target=None, method=NAME, **params)`` is the one entry point.
"""

from __future__ import annotations

import importlib
import pkgutil

from explain_engine.explainers.registry import (
    METHODS,
    explain,
    explain_many,
    get,
    methods_for,
    register,
    register_group,
)

_NOT_METHODS = {"registry", "evidence"}

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _info.name.startswith("_") and _info.name not in _NOT_METHODS:
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["METHODS", "explain", "explain_many", "get", "methods_for", "register", "register_group"]
