"""The explanation benchmark's transformer path: a BERT built from a config, every method timed per
document (a smoke test of ``bench/explain.py`` with a few methods on one short text)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="the optional extra 'transformers' is not installed")

from bench.explain import bench_one, transformer_size  # noqa: E402
from bench.train_infer import TRANSFORMER_SIZES  # noqa: E402

torch.set_num_threads(1)


def test_transformer_size_follows_the_device():
    assert transformer_size(torch.device("cpu"), "auto") == "small"
    assert transformer_size(torch.device("cuda"), "auto") == "base"
    assert transformer_size(torch.device("cpu"), "base") == "base"
    assert (
        TRANSFORMER_SIZES["base"]["hidden_size"] == 768
        and TRANSFORMER_SIZES["base"]["num_hidden_layers"] == 12
    )


def test_bench_times_transformer_methods_per_document():
    result = bench_one("transformer", 50, 1, torch.device("cpu"), ["attention_rollout", "occ_1"], "small")
    assert result["arch"] == "transformer-small" and result["tokens_per_doc"] >= 52  # 50 words, [CLS], [SEP]
    assert {"attention_rollout", "occ_1", "grad_all8_shared"} <= set(result["seconds_per_doc"])
    assert all(v > 0 for v in result["seconds_per_doc"].values())
    assert result["integrated_ours_per_doc"] > 0 and "occ_1" in result["forward_floor_per_doc"]
