"""One line per method on what it reported about its texts: integrated gradients' completeness
(:func:`~explain_engine.explainers.gradients.completeness_summary`) and LRP's amplification
(:func:`~explain_engine.explainers.lrp.amplification_summary`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from explain_engine.explainers.gradients import completeness_summary
from explain_engine.explainers.lrp import amplification_summary

SUMMARIES = (completeness_summary, amplification_summary)


def summary_lines(diagnostics: Mapping[str, Sequence[dict]], ids: Sequence[Any] | None = None) -> list[str]:
    """The summary lines of every method in ``diagnostics`` (``{method: [report per text]}``) that reports any."""
    lines = (
        summary(method, reports, ids) for method, reports in diagnostics.items() for summary in SUMMARIES
    )
    return [line for line in lines if line]
