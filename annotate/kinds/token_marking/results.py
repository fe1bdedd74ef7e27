"""Results of a token-marking study (Prasad et al. 2021, eq. 4 and §4), read from the
database: expert oracles (the share of annotators who marked each word), agreement over words and,
with a model run and method, the importance alignment ΔA. The numbers come from the engine.
:class:`TokenMarkingResults` is the kind's results page: ``?run=<model run id>&method=<name>`` picks the
explanations compared with the oracles (``?run=none``: no model); the newest run with explanations and
its integrated-gradients method are the default.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from annotate.kinds.token_marking.config import CONTROL_SECRET
from annotate.models import Explanation, ModelRun, Study
from annotate.quality.exclusion import counted_responses
from annotate.tasks.results import N_BOOT, MethodField, ResultsPage, RunField, from_results
from explain_engine.api import alignment_report, marking_report

TABLES = ("oracle", "examples")
#: Integrated gradients (dot product with the embedding, class score) first: Prasad et al. 2021's method.
PREFERRED_METHODS = ("grad_dot_int_s", "grad_dot_int_p", "grad_l2_int_s", "grad_l2_int_p")


def explanation_runs(study: Study):
    """Model runs on the study's dataset with stored explanations, newest first."""
    if study.dataset_id is None:
        return ModelRun.objects.none()
    explained = Explanation.objects.values("model_run_id")
    return ModelRun.objects.filter(dataset_id=study.dataset_id, pk__in=explained).order_by("-created", "-pk")


def explanation_methods(run: ModelRun) -> list[str]:
    """The run's stored methods, integrated gradients first (Prasad et al. 2021), then by name."""
    methods = sorted(set(Explanation.objects.filter(model_run=run).values_list("method", flat=True)))
    preferred = [m for m in PREFERRED_METHODS if m in methods]
    return preferred + [m for m in methods if m not in preferred]


def marking_results(
    study: Study, model_run: ModelRun | None = None, method: str | None = None, n_boot: int = N_BOOT
) -> dict[str, Any]:
    """Expert oracles, agreement over words and (with a run and method) importance alignment ΔA.

    Control items (``random_controls``: an input shown with a random other input's explanation) are not
    examples of their own: their marks are the expert oracle of that input's random explanation."""
    items, controls = _study_items(study)
    maps, workers = _marks(study, items, controls)
    report = marking_report(
        [row[3] or [] for row in items.values()], [maps.get(i, []) for i in items], n_boot
    )
    examples = [
        _example(row, found, maps, controls)
        for row, found in zip(items.values(), report["examples"], strict=True)
    ]
    result: dict[str, Any] = {
        "answers": sum(len(m) for m in maps.values()),
        "workers": len(workers),
        "items": len(items),
        "controls": len(controls),
        "marked_items": sum(1 for e in examples if e["annotators"]),
        "agreement": report["agreement"],
        "examples": examples,
        "model_run": None,
        "method": method,
        "alignment": None,
    }
    if model_run is not None and method:
        result["model_run"] = {
            "id": model_run.pk,
            "name": model_run.name,
            "architecture": model_run.architecture,
        }
        result["alignment"] = _alignment(model_run, method, examples, maps, n_boot, bool(controls))
    for example in examples:
        if example["control"] is not None:
            example["control_annotators"] = len(example["control"].pop("maps"))
    return result


def _study_items(study: Study) -> tuple[dict[int, tuple], dict[int, dict[str, Any]]]:
    """The study's non-gold items by id (``id, document, external id, words, explanation, label``) and
    its control items by document."""
    items, controls = {}, {}
    rows = (
        study.items.filter(is_gold=False)
        .order_by("position", "id")
        .values_list(
            "id",
            "document_id",
            "document__external_id",
            "payload__words",
            "payload__explanation",
            "payload__label",
            f"secret__{CONTROL_SECRET}",
        )
    )
    for row in rows:
        if isinstance(row[6], dict):
            controls[row[1]] = {
                "item": row[0],
                "explanation": row[4],
                "partner": row[6].get("explanation_of"),
            }
        else:
            items[row[0]] = row[:6]
    return items, controls


def _marks(study: Study, items: dict[int, tuple], controls: dict[int, dict]) -> tuple[dict, set[int]]:
    """The counted word maps of each item and control item (of the item's length), and who marked."""
    maps: dict[int, list[list[int]]] = defaultdict(list)
    workers = set()
    lengths = {row[0]: len(row[3] or []) for row in items.values()}
    doc_length = {row[1]: len(row[3] or []) for row in items.values()}
    lengths |= {c["item"]: doc_length.get(doc_id, -1) for doc_id, c in controls.items()}
    for item_id, worker_id, word_map in counted_responses(study).values_list(
        "item_id", "worker_id", "answer__map"
    ):
        if item_id in lengths and isinstance(word_map, list) and len(word_map) == lengths[item_id]:
            maps[item_id].append(word_map)
            workers.add(worker_id)
    return maps, workers


def _example(row: tuple, found: dict[str, Any], maps: dict, controls: dict[int, dict]) -> dict[str, Any]:
    """One input with its expert oracle and most marked words (``found``, from the engine's marking report)
    and its control item."""
    item_id, doc_id, external, words, explanation, label = row
    control = controls.get(doc_id)
    return {
        "item": item_id,
        "document": external,
        "document_id": doc_id,
        "label": label,
        "explanation": explanation,
        "words": words or [],
        "annotators": len(maps.get(item_id, [])),
        "oracle": found["oracle"],
        "top_words": found["top_words"],
        "control": None
        if control is None
        else {
            "explanation": control["explanation"],
            "explanation_of": control["partner"],
            "maps": maps.get(control["item"], []),
        },
    }


def _alignment(
    run: ModelRun, method: str, examples: list[dict], maps, n_boot: int, has_controls: bool
) -> dict[str, Any]:
    """Prasad et al. 2021 §3.3: ΔA of the run's ``method`` attributions against the expert and hard
    oracles, each with C_R from the same oracle of a random explanation. The expert's C_R comes from
    the marks of the control items; a study without them gets no expert ΔA (``expert_unavailable``)."""
    marked = [e for e in examples if e["annotators"]]
    rows = Explanation.objects.filter(
        model_run=run, method=method, document_id__in=[e["document_id"] for e in marked]
    ).values_list("document_id", "target", "scores")
    by_doc: dict[int, dict[str, list]] = defaultdict(dict)
    for doc_id, target, scores in rows:
        by_doc[doc_id][target] = scores
    usable, no_gold, no_control = [], [], 0
    for example in marked:
        targets = by_doc.get(example["document_id"], {})
        # Prasad et al. 2021 attribute with respect to the gold label, and only to it.
        if targets and str(example["label"]) not in targets:
            no_gold.append(example["document"])
            continue
        scores = targets.get(str(example["label"]))
        if not (isinstance(scores, list) and len(scores) == len(example["words"])):
            continue
        if has_controls and not (example["control"] and example["control"]["maps"]):
            no_control += 1  # C_R needs this input's marks against its random explanation
            continue
        usable.append((example, scores))
    out: dict[str, Any] = {
        "examples": len(usable),
        "skipped": len(marked) - len(usable),
        "without_control_marks": no_control,
        "per_example": [],
    }
    if no_gold:
        shown = ", ".join(repr(d) for d in no_gold[:5]) + (
            f" and {len(no_gold) - 5} more" if len(no_gold) > 5 else ""
        )
        out["error"] = (
            f"the run's {method} attributions miss the gold label of document {shown}: "
            "importance alignment needs attributions for the gold label"
        )
        return out
    if len(usable) < 2:
        out["error"] = "needs at least two marked examples with attributions of this method"
        if has_controls:
            out["error"] += " and marks on their control items"
        return out
    controls: dict[str, Any] = {}
    if has_controls:
        controls = {
            "random_explanations": [e["control"]["explanation"] for e, _ in usable],
            "random_markings": [e["control"]["maps"] for e, _ in usable],
        }
    scored = alignment_report(
        [e["words"] for e, _ in usable],
        [e["explanation"] for e, _ in usable],
        [maps[e["item"]] for e, _ in usable],
        [a for _, a in usable],
        n_boot=n_boot,
        **controls,
    )
    out.update(expert=scored["expert"], hard=scored["hard"])
    if scored["expert"] is None:
        out["expert_unavailable"] = (
            "C_R for the expert oracle is unavailable: the study has no control items (inputs marked "
            "against a random other explanation, the study option random_controls)"
        )
    for i, ((example, _), values, attr) in enumerate(
        zip(usable, scored["examples"], scored["attributions"], strict=True)
    ):
        if has_controls:
            partner = example["control"]["explanation_of"]
        else:
            partner = usable[scored["pairing"][i]][0]["document"]
        out["per_example"].append(
            {"item": example["item"], "document": example["document"], "random_partner": partner, **values}
        )
        example["attribution"] = attr
    return out


def alignment_chart(results: dict[str, Any]) -> dict[str, Any] | None:
    """Bar chart data: ΔA with its bootstrap interval for the expert and the hard oracle."""
    alignment = results.get("alignment")
    if not alignment or not alignment.get("hard"):
        return None
    names = ("expert", "hard") if alignment.get("expert") else ("hard",)
    titles = {"expert": "expert oracle (markings)", "hard": "hard oracle (explanation words)"}
    return {
        "labels": [titles[n] for n in names],
        "series": [
            {
                "name": "ΔA",
                "values": [alignment[n]["delta_a"]["value"] for n in names],
                "lower": [alignment[n]["delta_a"]["ci_low"] for n in names],
                "upper": [alignment[n]["delta_a"]["ci_high"] for n in names],
            }
        ],
        "title": f"Importance alignment ΔA of {results['method']}",
        "yLabel": "ΔA",
    }


def marking_table(results: dict[str, Any], table: str) -> tuple[list[str], list[list]]:
    """Columns and rows of one CSV table of :func:`marking_results`."""
    if table == "oracle":
        columns = ["item", "document", "word_index", "word", "annotators", "share", "attribution"]
        rows = []
        for e in results["examples"]:
            if e["oracle"] is None:
                continue
            attribution = e.get("attribution")
            for i, (word, share) in enumerate(zip(e["words"], e["oracle"], strict=True)):
                rows.append(
                    [
                        e["item"],
                        e["document"],
                        i,
                        word,
                        e["annotators"],
                        share,
                        None if attribution is None else attribution[i],
                    ]
                )
        return columns, rows
    if table == "examples":
        columns = [
            "item",
            "document",
            "random_partner",
            "c_expert",
            "c_random_expert",
            "c_hard",
            "c_random_hard",
        ]
        per_example = (results.get("alignment") or {}).get("per_example", [])
        return columns, [[p[c] for c in columns] for p in per_example]
    raise KeyError(table)


class TokenMarkingResults(ResultsPage):
    """The results page of a token-marking study: expert oracles, agreement over words, the ΔA chart."""

    template = "token_marking/results.html"
    tables = {name: from_results(marking_table, name) for name in TABLES}
    query_fields = (RunField(explanation_runs), MethodField(explanation_methods))

    def compute(self) -> dict[str, Any]:
        return marking_results(self.study, self.query["run"], self.query["method"])

    def context(self) -> dict[str, Any]:
        return super().context() | {"chart": alignment_chart(self.results)}
