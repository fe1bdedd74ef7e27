"""Explanation methods: one module per method family, all registered in :mod:`.registry`.

Importing this package imports every public module in it (:func:`explain_engine.registry.discover`),
so that the registry is complete. ``explain(bundle, texts, target=None, method=NAME, **params)`` is
the one entry point; :func:`explain_many` runs several methods, sharing passes within a group.
"""

from __future__ import annotations

from explain_engine.explainers.registry import (
    METHODS,
    TRAINING_ATTENTION,
    Explained,
    Fitting,
    MethodInfo,
    MethodSpec,
    Param,
    ParamError,
    check_params,
    describe_method,
    explain,
    explain_many,
    get,
    methods_for,
    register,
    register_group,
    resolve_methods,
)
from explain_engine.registry import discover

discover(__name__)

__all__ = [
    "METHODS",
    "TRAINING_ATTENTION",
    "Explained",
    "Fitting",
    "MethodInfo",
    "MethodSpec",
    "Param",
    "ParamError",
    "check_params",
    "describe_method",
    "explain",
    "explain_many",
    "get",
    "methods_for",
    "register",
    "register_group",
    "resolve_methods",
]
