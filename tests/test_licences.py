"""No GPL or AGPL at run time (the project is MIT): every package the engine and the web app install,
followed transitively through the installed metadata, is checked for a GPL/AGPL licence in its
``License-Expression``, its licence classifiers and its ``License`` field. LGPL (psycopg2's) is fine, and so is
GPL with a linking exception (GCC's runtime library exception, for wheels that bundle libgfortran).
Test-only references (krippendorff, GPL-3.0-or-later) live in the ``test`` extra and are not followed."""

from __future__ import annotations

import re
import tomllib
from email.message import Message
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_EXTRAS = ("web", "transformers")
COPYLEFT_ID = re.compile(r"^A?GPL-")  # SPDX ids: GPL-3.0-or-later, AGPL-3.0-only; LGPL-* does not match
COPYLEFT_TEXT = re.compile(r"(?<![LA-Za-z])(A?GPL|(Affero )?General Public License)", re.IGNORECASE)
LESSER_TEXT = re.compile(r"Lesser|Library General Public|\bLGPL", re.IGNORECASE)


def runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = list(project["dependencies"])
    for extra in RUNTIME_EXTRAS:
        names += project["optional-dependencies"][extra]
    # an extra that includes another ("hatlab[transformers]") is followed through RUNTIME_EXTRAS
    return [req for req in map(Requirement, names) if canonicalize_name(req.name) != "hatlab"]


def runtime_closure() -> dict[str, metadata.Distribution]:
    """Every installed distribution the runtime requirements reach, by canonical name."""
    found: dict[str, metadata.Distribution] = {}
    pending = [(req, set(req.extras)) for req in runtime_requirements()]
    while pending:
        req, extras = pending.pop()
        name = canonicalize_name(req.name)
        if name in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"runtime dependency {req.name} is not installed: install requirements/dev.lock")
        found[name] = dist
        for line in dist.requires or []:
            sub = Requirement(line)
            wanted = sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in extras | {""})
            if wanted:
                pending.append((sub, set(sub.extras)))
    return found


def _spdx_ok(tokens: list[str]) -> bool:
    """Whether an SPDX expression (tokenised) can be taken without GPL/AGPL: OR needs one acceptable side,
    AND needs both, ``X WITH exception`` is acceptable (the exception lifts the copyleft at run time)."""

    def expression(i: int) -> tuple[bool, int]:
        ok, i = term(i)
        while i < len(tokens) and tokens[i].upper() == "OR":
            right, i = term(i + 1)
            ok = ok or right
        return ok, i

    def term(i: int) -> tuple[bool, int]:
        ok, i = factor(i)
        while i < len(tokens) and tokens[i].upper() == "AND":
            right, i = factor(i + 1)
            ok = ok and right
        return ok, i

    def factor(i: int) -> tuple[bool, int]:
        if tokens[i] == "(":
            ok, i = expression(i + 1)
            return ok, i + 1  # the ")"
        ident, i = tokens[i], i + 1
        if i < len(tokens) and tokens[i].upper() == "WITH":
            return True, i + 2
        return not COPYLEFT_ID.match(ident), i

    return expression(0)[0]


def copyleft_reason(meta: metadata.PackageMetadata) -> str | None:
    """Why a distribution's metadata says GPL/AGPL, or ``None``. ``License-Expression`` decides when present;
    else the licence classifiers (GPL unless another licence is offered beside it); else a one-line
    ``License`` field (a long one is the licence's text, which may merely mention the GPL)."""
    expression = meta.get("License-Expression")
    if expression:
        tokens = re.findall(r"\(|\)|[^\s()]+", expression)
        return None if _spdx_ok(tokens) else f"License-Expression: {expression}"
    licences = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    copyleft = [c for c in licences if COPYLEFT_TEXT.search(c) and not LESSER_TEXT.search(c)]
    if licences:
        return f"classifier: {copyleft[0]}" if copyleft and len(copyleft) == len(licences) else None
    text = (meta.get("License") or "").strip()
    if "\n" not in text and len(text) <= 200 and COPYLEFT_TEXT.search(text) and not LESSER_TEXT.search(text):
        return f"License: {text}"
    return None


def test_no_runtime_dependency_is_gpl_or_agpl():
    closure = runtime_closure()
    assert {"django", "numpy", "torch", "transformers", "tokenizers"} <= closure.keys()
    offenders = {name: reason for name, dist in closure.items() if (reason := copyleft_reason(dist.metadata))}
    assert offenders == {}, f"GPL/AGPL at run time: {offenders}"


def test_test_only_references_stay_out_of_the_runtime_closure():
    assert not {"krippendorff", "crowd-kit", "lime"} & runtime_closure().keys()


def _meta(**fields: str | list[str]) -> Message:
    message = Message()  # what importlib.metadata returns for an installed distribution
    for key, value in fields.items():
        for item in value if isinstance(value, list) else [value]:
            message[key.replace("_", "-")] = item
    return message


@pytest.mark.parametrize(
    ("fields", "flagged"),
    [
        ({"License_Expression": "GPL-3.0-or-later"}, True),
        ({"License_Expression": "AGPL-3.0-only"}, True),
        ({"License_Expression": "MIT AND (GPL-2.0-only OR BSD-3-Clause)"}, False),
        ({"License_Expression": "MIT AND GPL-2.0-only"}, True),
        ({"License_Expression": "BSD-3-Clause AND GPL-3.0-or-later WITH GCC-exception-3.1"}, False),
        ({"License_Expression": "LGPL-3.0-or-later"}, False),
        ({"Classifier": ["License :: OSI Approved :: GNU General Public License v3 (GPLv3)"]}, True),
        ({"Classifier": ["License :: OSI Approved :: GNU Affero General Public License v3"]}, True),
        (
            {
                "Classifier": [
                    "License :: OSI Approved :: GNU Library or Lesser General Public License (LGPL)"
                ]
            },
            False,
        ),
        ({"License": "LGPL with exceptions"}, False),
        ({"License": "GPLv3"}, True),
        ({"License": "BSD\n\nParts bundle libgfortran, under the GPL with the runtime exception"}, False),
        ({"License": "MIT"}, False),
    ],
)
def test_copyleft_reason_reads_expressions_classifiers_and_licence_fields(fields, flagged):
    assert (copyleft_reason(_meta(**fields)) is not None) == flagged


def test_the_check_catches_the_gpl_package_the_tests_use_as_a_reference():
    try:
        krippendorff = metadata.distribution("krippendorff")
    except metadata.PackageNotFoundError:
        pytest.fail(
            "krippendorff (a test-only reference, GPL-3.0-or-later) is not installed: install the dev lock"
        )
    assert copyleft_reason(krippendorff.metadata) is not None
