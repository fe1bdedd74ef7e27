"""Integrated gradients' completeness checks as plain data, without torch: the distribution of the
path points a set of texts used (what ``explain``, ``alignment`` and ``informed-twin`` report beside
the flagged texts; Sundararajan et al. 2017 §3 for the check itself, which
:mod:`explain_engine.explainers.gradients` computes)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def path_point_distribution(steps: Sequence[int], cap: int | None = None) -> dict[str, float | int | None]:
    """Min, quartiles, 90th percentile and max of the path points used per text (None when no text
    reports any), and with ``cap`` how many texts spent the whole cap."""
    if not len(steps):
        return {"min": None, "q1": None, "median": None, "q3": None, "p90": None, "max": None, "at_cap": 0}
    values = np.asarray(steps, dtype=np.int64)
    q1, median, q3, p90 = (float(np.percentile(values, q)) for q in (25, 50, 75, 90))
    at_cap = int((values >= cap).sum()) if cap is not None else 0
    return {
        "min": int(values.min()),
        "q1": q1,
        "median": median,
        "q3": q3,
        "p90": p90,
        "max": int(values.max()),
        "at_cap": at_cap,
    }
