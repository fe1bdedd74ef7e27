"""Balanced, stratified train / validation / test splits with a seed (Sen et al. 2020 §5.1: 80/10/10)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

SPLIT_NAMES = ("train", "validation", "test")


def _by_label(records: Sequence[dict]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = defaultdict(list)
    for i, rec in enumerate(records):
        groups[str(rec["label"])].append(i)
    return dict(sorted(groups.items()))


def balance(records: Sequence[dict], seed: int = 0) -> list[dict]:
    """Down-sample every class to the size of the smallest one (records keep their order)."""
    groups = _by_label(records)
    if not groups:
        return []
    size = min(len(idx) for idx in groups.values())
    rng = np.random.default_rng(seed)
    kept = np.concatenate([rng.permutation(idx)[:size] for idx in groups.values()])
    return [records[i] for i in np.sort(kept)]


def split_records(
    records: Sequence[dict], fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0
) -> tuple[list[dict], list[dict], list[dict]]:
    """Stratified train / validation / test split: each class is cut by ``fractions`` on its own.

    Per class of ``n`` records, ``round(n·f_train)`` go to train, ``round(n·f_val)`` to
    validation and the rest to test; within a split records keep their input order.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or not np.isclose(sum(fractions), 1.0):
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {list(fractions)}")
    rng = np.random.default_rng(seed)
    parts: list[list[int]] = [[], [], []]
    for idx in _by_label(records).values():
        order = rng.permutation(idx)
        n_train = int(round(len(order) * fractions[0]))
        n_val = int(round(len(order) * fractions[1]))
        parts[0].extend(order[:n_train].tolist())
        parts[1].extend(order[n_train : n_train + n_val].tolist())
        parts[2].extend(order[n_train + n_val :].tolist())
    train, val, test = ([records[i] for i in sorted(p)] for p in parts)
    return train, val, test


def balanced_split(
    records: Sequence[dict], fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0
) -> tuple[list[dict], list[dict], list[dict]]:
    """:func:`balance`, then :func:`split_records` — the papers' protocol (Sen et al. 2020 §5.1)."""
    return split_records(balance(records, seed), fractions, seed)


def given_splits(records: Sequence[dict]) -> tuple[list[dict], list[dict], list[dict]] | None:
    """The split the records carry in their ``split`` field, or None when any record lacks one (or has
    null there).

    ``dev`` and ``val`` (ERASER's name) count as ``validation``. Unknown split names are an error.
    """
    if not records or any(rec.get("split") in (None, "") for rec in records):
        return None
    parts: dict[str, list[dict]] = {name: [] for name in SPLIT_NAMES}
    for rec in records:
        name = "validation" if rec["split"] in ("dev", "val") else rec["split"]
        if name not in parts:
            raise ValueError(
                f"record {rec.get('id')!r}: unknown split {rec['split']!r}; use one of {SPLIT_NAMES}"
            )
        parts[name].append(rec)
    return parts["train"], parts["validation"], parts["test"]
