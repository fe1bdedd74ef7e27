"""The engine without its optional extras: every other family works, and asking for one that needs a missing
extra is answered with one sentence naming the ``pip install`` (here ``transformers`` is hidden from a fresh
interpreter, so the check holds whether or not the extra is installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from explain_engine.extras import MissingExtra, available, optional
from explain_engine.models import available_architectures, require_extra

ROOT = Path(__file__).resolve().parents[2]
SENTENCE = "the transformer family needs the optional extra: pip install 'hatlab[transformers]'"


MISSING_EXTRA = """
import sys
sys.modules["transformers"] = None  # the optional extra is not installed
import explain_engine.api as api
from explain_engine.__main__ import main
from explain_engine.extras import MissingExtra
assert api.build_model("cnn", 50, 2, embedding_dim=8, num_filters=4).architecture == "cnn"
try:
    api.build_model("transformer", 0, 2, checkpoint="x")
except MissingExtra as exc:
    print("MESSAGE:", exc)
sys.exit(main(["train", "--data", sys.argv[1], "--model", "transformer", "--checkpoint", "x", "--out", sys.argv[2]]))
"""


def test_without_the_extra_the_engine_works_and_the_family_says_what_to_install(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(json.dumps({"text": t, "label": t.split()[0]}) + "\n" for t in ["good day", "bad day"] * 5),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-c", MISSING_EXTRA, str(data), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert f"MESSAGE: {SENTENCE}" in done.stdout
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == f"error: {SENTENCE}"
    assert "Traceback" not in done.stderr


def test_a_hidden_extra_is_missing_in_this_process_too(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    assert not available("transformers")
    assert "transformer" not in available_architectures() and "cnn" in available_architectures()
    with pytest.raises(MissingExtra, match="pip install 'hatlab\\[transformers\\]'") as caught:
        require_extra("transformer")
    assert str(caught.value) == SENTENCE and isinstance(caught.value, ImportError | ValueError)
    require_extra("cnn")  # a family without an extra needs nothing


def test_optional_returns_an_installed_module():
    assert optional("json", extra="none", family="test") is json
