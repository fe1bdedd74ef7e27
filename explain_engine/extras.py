"""Optional extras of the engine: a family that needs a package outside the base install asks here.

``optional("transformers", extra="transformers", family="transformer")`` returns the module, or raises
:class:`MissingExtra` with one sentence naming the ``pip install`` that brings it. The import happens on
first use, so importing the engine never needs the extra.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtra(ImportError, ValueError):
    """An optional extra that is not installed.

    It is an ``ImportError`` (a package is missing) and a ``ValueError`` (the CLI prints it as one line).
    """


def optional(module: str, *, extra: str, family: str) -> ModuleType:
    """The module ``module`` of the optional extra ``extra``, which family ``family`` needs."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(
            f"the {family} family needs the optional extra: pip install 'hatlab[{extra}]'", name=module
        ) from None


def available(module: str) -> bool:
    """Whether ``module`` can be imported (an optional extra is installed)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
