"""What the heat-map page shows: one document's words shaded by a method's relevance, beside the
human attention maps of the document (Sen et al. 2020 §3: each annotator's 0/1 map, their Consensus
Attention Map = AND and Super Attention Map = OR). The maps are those whose answers count in their study
(:func:`annotate.quality.exclusion.standing`, the rule of the results and the dashboards).

Relevance is shown on a signed scale of :data:`LEVELS` steps per sign: each word's score divided
by the largest absolute score of the document, so the strongest word of either sign gets the full
colour. The steps become CSS classes (``heat-p3``, ``heat-n7``), so the page needs no inline style.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from annotate.models import Document, Explanation, ModelRun, Prediction, Response
from annotate.quality.exclusion import standing
from annotate.tasks import TASK_KINDS
from explain_engine.api import TRAINING_ATTENTION as ATTENTION
from explain_engine.api import consensus_maps

LEVELS = 10
#: The registry's attention method: the weights the training attention map already shows.
ATTENTION_METHOD = "attention"


@dataclass(frozen=True)
class MapRow:
    """One row of the page: a name, the label it speaks for, and a signed level per word."""

    name: str
    label: str
    levels: list[int]
    scores: list[float] | None = None
    kind: str = "machine"


def signed_levels(scores: Sequence[float | None], levels: int = LEVELS) -> list[int]:
    """Each score as a signed step in ``[-levels, levels]`` relative to the largest ``|score|``.

    A missing (None) or non-finite score is 0; all-zero scores give all zeros.
    """
    values = [float(s) if s is not None and math.isfinite(s) else 0.0 for s in scores]
    peak = max((abs(v) for v in values), default=0.0)
    if peak == 0.0:
        return [0] * len(values)
    return [round(v / peak * levels) for v in values]


def level_class(level: int) -> str:
    """The CSS class of a signed level (``heat-0``, ``heat-p4``, ``heat-n10``)."""
    if level == 0:
        return "heat-0"
    return f"heat-{'p' if level > 0 else 'n'}{abs(level)}"


def human_rows(document: Document) -> list[MapRow]:
    """The 0/1 maps of the responses on ``document`` in studies whose kind collects human attention
    maps (kinds whose class says ``attention_maps = True``), one row each, then CAM and SAM when there are
    at least two maps. A map whose worker's answers do not count in its study (excluded, or pending
    their minimum golds) is left out."""
    n_words = len(document.words)
    responses = list(
        Response.objects.filter(
            item__document=document, study__kind__in=TASK_KINDS.where(attention_maps=True)
        )
        .counted()
        .select_related("worker", "study")
        .order_by("id")
    )
    studies = {r.study_id: r.study for r in responses}
    left_out = {
        (pk, worker)
        for pk, study in studies.items()
        for worker in standing(study, [r.worker_id for r in responses if r.study_id == pk]).left_out
    }
    rows: list[MapRow] = []
    maps: list[list[int]] = []
    for response in responses:
        if (response.study_id, response.worker_id) in left_out:
            continue
        answer = response.answer if isinstance(response.answer, dict) else {}
        word_map = answer.get("map")
        if not isinstance(word_map, list) or len(word_map) != n_words:
            continue
        maps.append([1 if v else 0 for v in word_map])
        rows.append(
            MapRow(
                f"annotator {response.worker.pseudonym_for(response.study.owner_id)}",
                str(answer.get("label", "")),
                [LEVELS * v for v in maps[-1]],
                kind="human",
            )
        )
    if len(maps) >= 2:
        cam, sam = consensus_maps(maps)
        rows.append(MapRow(f"CAM (AND of {len(maps)} maps)", "", [LEVELS * v for v in cam], kind="consensus"))
        rows.append(MapRow(f"SAM (OR of {len(maps)} maps)", "", [LEVELS * v for v in sam], kind="consensus"))
    return rows


def machine_options(model_run: ModelRun, document: Document) -> list[tuple[str, str]]:
    """``(method, target)`` pairs with stored relevance for the document; the training attention
    map comes first when the run's prediction has one, and then stands for the ``attention`` method
    too (the same weights α_t of the same model: one row, not two)."""
    options: list[tuple[str, str]] = []
    prediction = Prediction.objects.filter(model_run=model_run, document=document).first()
    explanations = Explanation.objects.filter(model_run=model_run, document=document)
    if prediction is not None and prediction.attention is not None:
        options.append((ATTENTION, prediction.label))
        explanations = explanations.exclude(method=ATTENTION_METHOD)
    options.extend(explanations.order_by("method", "target").values_list("method", "target"))
    return options


def machine_row(model_run: ModelRun, document: Document, method: str, target: str) -> MapRow | None:
    """The relevance row of ``method`` for ``target``, or None when none is stored."""
    if method == ATTENTION:
        prediction = Prediction.objects.filter(model_run=model_run, document=document).first()
        if prediction is None or prediction.attention is None:
            return None
        scores = prediction.attention
        label = prediction.label
    else:
        explanation = Explanation.objects.filter(
            model_run=model_run, document=document, method=method, target=target
        ).first()
        if explanation is None:
            return None
        scores, label = explanation.scores, explanation.target
    if len(scores) != len(document.words):
        return None
    return MapRow(method, label, signed_levels(scores), [0.0 if s is None else float(s) for s in scores])


def page_words(document: Document) -> list[dict]:
    """The document's words (text and whether a line break precedes each), for the template."""
    text, spans = document.text, document.words
    return [
        {"text": text[s:e], "break": i > 0 and "\n" in text[spans[i - 1][1] : s]}
        for i, (s, e) in enumerate(spans)
    ]
