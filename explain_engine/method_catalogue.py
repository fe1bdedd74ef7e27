"""The explanation methods in words, read without loading torch: for each registered method its title,
source, one-line description, the architectures it applies to and whether it must be fitted first.

Pages that only name methods (a model run's page, the explain form, figure captions) read this
catalogue; the registry (:mod:`explain_engine.explainers`) imports torch and every method module, which
takes seconds in a fresh process. The catalogue is a snapshot of the registry kept in
:mod:`explain_engine.method_catalogue_data`; ``python -m explain_engine.method_catalogue`` rewrites it,
and a test holds it equal to the registry.
"""

from __future__ import annotations

import pprint
from pathlib import Path
from typing import Any

from explain_engine.method_catalogue_data import CATALOGUE
from explain_engine.method_names import STORED, MethodInfo

DATA_MODULE = Path(__file__).with_name("method_catalogue_data.py")


def describe_method(code: str) -> MethodInfo:
    """The title, source and one-line description of the method ``code``: a registered method or a
    stored map (the training attention); an unknown code is titled as it is, with no source or
    description."""
    if code in STORED:
        return STORED[code]
    entry = CATALOGUE.get(code)
    if entry is None:
        return MethodInfo(code, "", "")
    return MethodInfo(entry["title"], entry["source"], entry["doc"])


def methods_for(architecture: str, standalone: bool = False) -> list[str]:
    """Names of the methods that apply to ``architecture``, sorted (``standalone``: only those that need
    not be fitted first)."""
    return sorted(
        name
        for name, entry in CATALOGUE.items()
        if (entry["architectures"] is None or architecture in entry["architectures"])
        and not (standalone and entry["fitted"])
    )


def from_registry() -> dict[str, dict[str, Any]]:
    """The catalogue as the registry gives it now (imports torch)."""
    from explain_engine.explainers import METHODS

    return {
        name: {
            "title": spec.title,
            "source": spec.source,
            "doc": spec.doc,
            "architectures": list(spec.architectures) if spec.architectures is not None else None,
            "fitted": spec.fitted_with is not None,
        }
        for name, spec in sorted(METHODS.items())
    }


def write_data_module(path: Path = DATA_MODULE) -> None:
    """Rewrite the snapshot module from the registry."""
    body = pprint.pformat(from_registry(), width=110, sort_dicts=True)
    path.write_text(
        '"""The registry\'s methods in words (written by ``python -m explain_engine.method_catalogue``;'
        ' do not edit)."""\n\nfrom typing import Any\n\nCATALOGUE: dict[str, dict[str, Any]] = '
        f"{body}\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    write_data_module()
