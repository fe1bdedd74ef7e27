"""The exports of a study's protocol (offered when the study has one): ``participants`` (one row per
worker and platform unit that met the protocol: consent decision with version and time, the
questionnaires' answers, the screening verdict, skips and edits), ``skips`` (each skipped item with its
reason) and ``edits`` (each changed answer, before and after). Worker and platform ids are the same
per-researcher pseudonyms as in the responses export."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from django.db.models import Max

from annotate.exports.pseudonyms import AnonymousIds, platform_pseudonym
from annotate.models import (
    ConsentDecision,
    ItemSkip,
    Response,
    ResponseEdit,
    Study,
    SurveyAnswers,
    TrainingAnswer,
)
from annotate.protocol import attention, training
from annotate.protocol.controls import DEFAULT_MAX_SKIPS
from annotate.tasks.base import ATTENTION_KEY
from annotate.tasks.export_spec import Column, ExportTable, Table

PARTICIPANT_COLUMNS: tuple[Column, ...] = (
    ("worker", "the worker's pseudonym (as in the responses export)"),
    ("platform_assignment", "the platform's unit of work the worker entered with, hashed; empty for local work"),
    ("consent_version", "the version of the consent text the worker decided on (empty: no consent step)"),
    ("consent_accepted", "true: accepted; false: declined (then the worker was handed no item and is not a participant)"),
    ("consent_at", "when the worker decided (ISO 8601, UTC)"),
    ("pre_survey", "the answers to the pre-study questions, by question id (a JSON object in CSV)"),
    ("pre_survey_at", "when they were sent"),
    ("qualified", "the screening verdict: false ended the study for the worker before any item"),
    ("post_survey", "the answers to the post-study questions, by question id"),
    ("post_survey_at", "when they were sent"),
    ("training_attempts", "attempts at the training examples (empty: the study has no training)"),
    ("training_passed", "whether the worker passed the training (false: the study ended for them before any item)"),
    ("attention_missed", "attention checks answered otherwise than instructed (empty: the study has none)"),
    ("skipped", "how many items the worker skipped"),
    ("edited", "how many times the worker changed an answer already sent"),
)  # fmt: skip
SKIP_COLUMNS: tuple[Column, ...] = (
    ("item", "the skipped item's id (as in the responses export)"),
    ("document", "the item's document id, as imported"),
    ("worker", "the worker's pseudonym"),
    ("reason", "the reason the worker chose, among the study's skip reasons"),
    ("skipped_at", "when (ISO 8601, UTC); the item went to another worker"),
)
TRAINING_COLUMNS: tuple[Column, ...] = (
    ("worker", "the worker's pseudonym"),
    ("example", "the training example's place in the training, from 1"),
    ("document", "its document's id, as imported (its item is not handed out for data)"),
    ("attempt", "the attempt at the training, from 1"),
    ("answer", "the worker's answer (the kind's answer object, JSON); never counted as data"),
    ("passed", "whether it matched the expected answer (the kind's gold grading)"),
    ("answered_at", "when (ISO 8601, UTC)"),
)
EDIT_COLUMNS: tuple[Column, ...] = (
    ("response", "the response whose answer changed (as in the responses export, which holds the answer now)"),
    ("item", "its item's id"),
    ("worker", "the worker's pseudonym"),
    ("previous_answer", "the answer before the change (the kind's answer object, JSON)"),
    ("answer", "the answer after it"),
    ("edited_at", "when (ISO 8601, UTC)"),
)  # fmt: skip


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def participant_rows(study: Study, unverified: bool = False) -> Table:
    """One row per worker and platform unit that decided on the consent or sent a questionnaire."""
    anonymous = AnonymousIds(study.owner_id)
    seats: dict[tuple[int, str], dict[str, Any]] = {}
    workers: dict[int, tuple[str, str]] = {}

    def seat(worker_id: int, ref: str, provider: str, external: str) -> dict[str, Any]:
        workers[worker_id] = (provider, external)
        return seats.setdefault((worker_id, ref), {name: None for name, _ in PARTICIPANT_COLUMNS})

    decisions = ConsentDecision.objects.filter(study=study).values_list(
        "worker_id",
        "ref",
        "worker__provider",
        "worker__external_id",
        "version__number",
        "accepted",
        "decided_at",
    )
    for worker_id, ref, provider, external, number, accepted, at in decisions:
        seat(worker_id, ref, provider, external).update(
            consent_version=number, consent_accepted=accepted, consent_at=_iso(at)
        )
    answers = SurveyAnswers.objects.filter(study=study).values_list(
        "worker_id",
        "ref",
        "worker__provider",
        "worker__external_id",
        "phase",
        "answers",
        "qualified",
        "created",
    )
    for worker_id, ref, provider, external, phase, given, qualified, at in answers:
        row = seat(worker_id, ref, provider, external)
        row[f"{phase}_survey"], row[f"{phase}_survey_at"] = given, _iso(at)
        if phase == SurveyAnswers.Phase.PRE:
            row["qualified"] = qualified
    _add_training(study, seat)
    checks = bool(attention.settings_of(study).get("items"))
    if checks:  # everyone who met an attention check has a row
        met = Response.objects.filter(study=study, item__secret__has_key=ATTENTION_KEY).values_list(
            "worker_id", "assignment__provider_assignment_id", "worker__provider", "worker__external_id"
        )
        for worker_id, ref, provider, external in met.distinct():
            seat(worker_id, ref, provider, external)
    missed = Counter(
        Response.objects.filter(
            study=study, gold_passed=False, item__secret__has_key=ATTENTION_KEY
        ).values_list("worker_id", flat=True)
    )
    skipped = Counter(ItemSkip.objects.filter(study=study).values_list("worker_id", flat=True))
    edited = Counter(
        ResponseEdit.objects.filter(response__study=study).values_list("response__worker_id", flat=True)
    )
    rows = []
    for (worker_id, ref), row in sorted(seats.items()):
        provider, external = workers[worker_id]
        row.update(
            worker=anonymous[provider, external],
            platform_assignment=platform_pseudonym(study.owner_id, provider, ref),
            skipped=skipped.get(worker_id, 0),
            edited=edited.get(worker_id, 0),
            attention_missed=missed.get(worker_id, 0) if checks else None,
        )
        rows.append(row)
    return [name for name, _ in PARTICIPANT_COLUMNS], rows


def _add_training(study: Study, seat: Callable[[int, str, str, str], dict[str, Any]]) -> None:
    """Each participant's training attempts and verdict on their row (``seat`` finds or makes it)."""
    attempts = (
        TrainingAnswer.objects.filter(study=study)
        .values("worker_id", "ref", "worker__provider", "worker__external_id")
        .annotate(most=Max("attempt"))
        .values_list("worker_id", "ref", "worker__provider", "worker__external_id", "most")
    )
    for worker_id, ref, provider, external, most in attempts:
        trained = training.state(study, worker_id, ref)
        row = seat(worker_id, ref, provider, external)
        row["training_attempts"] = most
        row["training_passed"] = None if trained is None else trained.passed


def training_rows(study: Study, unverified: bool = False) -> Table:
    anonymous = AnonymousIds(study.owner_id)
    found = (
        TrainingAnswer.objects.filter(study=study)
        .order_by("id")
        .values_list(
            "worker__provider", "worker__external_id", "item__position", "item__source__document__external_id",
            "attempt", "answer", "passed", "created",
        )
    )  # fmt: skip
    rows = [
        {"worker": anonymous[p, e], "example": pos + 1, "document": doc, "attempt": attempt, "answer": answer,
         "passed": passed, "answered_at": _iso(at)}
        for p, e, pos, doc, attempt, answer, passed, at in found
    ]  # fmt: skip
    return [name for name, _ in TRAINING_COLUMNS], rows


def skip_rows(study: Study, unverified: bool = False) -> Table:
    anonymous = AnonymousIds(study.owner_id)
    found = (
        ItemSkip.objects.filter(study=study)
        .order_by("id")
        .values_list(
            "item_id",
            "item__document__external_id",
            "worker__provider",
            "worker__external_id",
            "reason",
            "created",
        )
    )
    rows = [
        {"item": item, "document": doc, "worker": anonymous[p, e], "reason": reason, "skipped_at": _iso(at)}
        for item, doc, p, e, reason, at in found
    ]
    return [name for name, _ in SKIP_COLUMNS], rows


def edit_rows(study: Study, unverified: bool = False) -> Table:
    anonymous = AnonymousIds(study.owner_id)
    found = (
        ResponseEdit.objects.filter(response__study=study)
        .order_by("id")
        .values_list(
            "response_id", "response__item_id", "response__worker__provider", "response__worker__external_id",
            "previous_answer", "answer", "created",
        )
    )  # fmt: skip
    rows = [
        {
            "response": r,
            "item": i,
            "worker": anonymous[p, e],
            "previous_answer": before,
            "answer": after,
            "edited_at": _iso(at),
        }
        for r, i, p, e, before, after, at in found
    ]
    return [name for name, _ in EDIT_COLUMNS], rows


def protocol_tables(study: Study) -> list[ExportTable]:
    """The protocol's exports of ``study``: none without a protocol."""
    protocol = study.protocol or {}
    if not protocol:
        return []
    tables = [
        ExportTable(
            "participants",
            "Participants",
            "one row per worker who met the study's protocol: consent, questionnaires, screening, skips, edits",
            PARTICIPANT_COLUMNS,
            participant_rows,
        )
    ]
    if protocol.get("training"):
        tables.append(
            ExportTable(
                "training",
                "Training answers",
                "one row per answer to a training example (never counted as data)",
                TRAINING_COLUMNS,
                training_rows,
            )
        )
    if protocol.get("skip_reasons"):
        tables.append(
            ExportTable(
                "skips", "Skipped items", "one row per skipped item, with its reason", SKIP_COLUMNS, skip_rows
            )
        )
    if protocol.get("back"):
        tables.append(
            ExportTable(
                "edits",
                "Changed answers",
                "one row per changed answer, before and after",
                EDIT_COLUMNS,
                edit_rows,
            )
        )
    return tables


def _question_line(question: dict[str, Any]) -> str:
    kind = question["type"]
    shape = {
        "single": lambda q: "one of " + ", ".join(q["options"]),
        "multiple": lambda q: "any of " + ", ".join(q["options"]),
        "likert": lambda q: (
            f"a point from 1 to {q['points']}"
            + (f" ({q['labels'][0]} … {q['labels'][1]})" if q.get("labels") else "")
        ),
        "text": lambda q: f"free text, at most {q['max_length']} characters",
        "number": lambda q: (
            "a "
            + ("whole " if q.get("integer") else "")
            + f"number from {q.get('min', '—')} to {q.get('max', '—')}"
        ),
    }[kind](question)
    needed = "required" if question.get("required") else "optional"
    return f"- `{question['id']}` ({needed}): {question['prompt']} — {shape}"


def _rule_line(rule: dict[str, Any]) -> str:
    if "accept" in rule:
        return f"- `{rule['question']}` is one of: {', '.join(rule['accept'])}"
    return f"- `{rule['question']}` from {rule.get('min', '—')} to {rule.get('max', '—')}"


def protocol_section(study: Study) -> list[str]:
    """The datasheet's account of the protocol: the consent versions, the questionnaires and screening
    rules, the worker's controls, and how many workers took each way (declined, screened out)."""
    protocol = study.protocol or {}
    if not protocol:
        return []
    lines = ["## The protocol", ""]
    versions = study.consent_versions.order_by("number")
    decided = Counter(ConsentDecision.objects.filter(study=study).values_list("accepted", flat=True))
    if protocol.get("consent"):
        lines += [
            f"- Consent: {versions.count()} version(s) shown; {decided.get(True, 0)} workers accepted, "
            f"{decided.get(False, 0)} declined (those were handed no item and have no answers here)."
        ]
        lines += [f"  - version {v.number}, from {_iso(v.created)}" for v in versions]
    for phase, title in (("pre_survey", "Before the items"), ("post_survey", "After the items")):
        if protocol.get(phase):
            lines += ["", f"### Questions: {title.lower()}", ""]
            lines += [_question_line(q) for q in protocol[phase]]
    if protocol.get("screening"):
        screened = SurveyAnswers.objects.filter(study=study, phase="pre", qualified=False).count()
        lines += ["", "### Screening", "", "A participant qualifies when every rule holds:", ""]
        lines += [_rule_line(r) for r in protocol["screening"]]
        lines += ["", f"{screened} workers did not qualify; the study ended for them before any item."]
    if protocol.get("training"):
        setting = protocol["training"]
        lines += [
            "",
            "### Training",
            "",
            f"{len(setting['items'])} worked example(s) shown before the items, each followed by its expected "
            f"answer and explanation; a pass needs {setting['pass_mark']:.0%} of them right in one attempt, in "
            f"at most {setting['tries']} attempt(s). Their documents' items were not handed out for data; "
            "the `training` export holds the answers.",
        ]
    if protocol.get("attention"):
        setting = protocol["attention"]
        lines += ["", "### Attention checks", ""]
        lines += [f"- `{c['document']}`: “{c['instruction']}”" for c in setting["items"]]
        lines += [
            "",
            "Each is a gold item whose gold is the instructed answer, mixed in like the golds but left out of "
            f"gold trust; a worker who missed more than {setting['max_failures']} was handed no more items "
            "(`attention_missed` in the participants export).",
        ]
    if protocol.get("skip_reasons"):
        lines += [
            "",
            f"Workers could skip an item (at most {protocol.get('max_skips', DEFAULT_MAX_SKIPS)}) giving one of: ",
        ]
        lines[-1] += "; ".join(protocol["skip_reasons"]) + ". A skipped item went to another worker."
    if protocol.get("back"):
        lines += ["", "Workers could go back and change an answer while their session lasted; the answers "
                  "exported are the final ones, and the `edits` export holds every change."]  # fmt: skip
    return [*lines, ""]
