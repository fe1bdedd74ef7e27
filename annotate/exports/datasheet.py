"""A study's datasheet: a Markdown file that travels with its exports (and the zip of them all, with it) and says what they hold: the study's
settings, its counts and dates, and every column of every export (after Gebru et al. 2021, "Datasheets
for Datasets": how the data was collected, what it is composed of, how it was processed).
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from django.db.models import Count, Max, Min

from annotate.exports import tables as exports
from annotate.exports.protocol import protocol_section
from annotate.models import Item, Response, Study, WorkerTrust
from annotate.quality.redundancy import policy_of, redundancy_summary
from annotate.tasks import TASK_KINDS, get_kind


def _value(value: Any) -> str:
    """A setting as text a reader can take in: words and numbers as they are, lists and objects as JSON."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | dict):
        return "`" + json.dumps(value, ensure_ascii=False) + "`"
    return str(value)


def _cell(text: str) -> str:
    """Text for one cell of a Markdown table (a pipe would end the cell)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _columns(columns) -> list[str]:
    lines = ["| column | what it holds |", "|---|---|"]
    lines += [f"| `{name}` | {_cell(what)} |" for name, what in columns]
    return lines


def _date(value) -> str:
    return value.replace(microsecond=0).isoformat() if value else "—"


def datasheet(study: Study, unverified: bool = False) -> str:
    """The datasheet of ``study`` as Markdown (for the exports with or without ``unverified`` answers)."""
    lines = [
        f"# Datasheet: {study.name}",
        "",
        f"Exported {exports.exported_at()} from study `{study.uid}`.",
        "",
        *_study_section(study),
        "",
        *protocol_section(study),
        *_counts_section(study, unverified),
        "",
        "## The exports",
        *_exports_section(study, unverified),
    ]
    return "\n".join(lines) + "\n"


def _study_section(study: Study) -> list[str]:
    """The task, status, dates, dataset, provider, settings and instructions of the study."""
    kind = get_kind(study.kind)
    label = TASK_KINDS.meta(study.kind).get("label", study.kind)
    lines = [
        "## The study",
        "",
        f"- Task: {label} (`{study.kind}`) — {kind.title}",
        f"- Status: {study.get_status_display()}",
        f"- Created: {_date(study.created)}",
        f"- Dataset: {study.dataset.name if study.dataset_id else '—'}",
        f"- Crowd provider: {study.provider}",
        f"- Annotators per item: {study.annotators_per_item}",
        f"- Redundancy: {policy_of(study).describe(study.annotators_per_item)}",
        f"- Time limit: {study.time_limit_s} s per item",
        *_redundancy_lines(study),
        "",
        "### Settings",
        "",
    ]
    config = study.config if isinstance(study.config, dict) else {}
    lines += [f"- `{key}`: {_value(value)}" for key, value in config.items()] or ["- (none)"]
    if study.instructions:
        lines += ["", "### Instructions shown to workers", ""]
        lines += ["> " + line if line else ">" for line in study.instructions.splitlines()]
    return lines


def _redundancy_lines(study: Study) -> list[str]:
    """An adaptive study's items by how they stopped (none for a fixed study)."""
    summary = redundancy_summary(study, limit=0)
    if summary is None:
        return []
    per = summary["answers_per_stopped_item"]
    return [
        f"- Items stopped by their rule: {summary['by_rule']}; at the maximum: {summary['at_max']}; "
        f"still collecting: {summary['open']}; answers per stopped item: {'—' if per is None else f'{per:.2f}'}; "
        f"answers saved against {summary['fixed_max']} per item: {summary['saved']} (the responses export "
        "gives each item's answers and why it stopped)",
    ]


def _counts_section(study: Study, unverified: bool) -> list[str]:
    """Items, answers by verification state, workers by gold trust, the verified answers' dates, and
    which answers the exports hold and how ids are hidden."""
    responses = Response.objects.filter(study=study)
    by_state = dict(
        responses.values_list("verification").annotate(n=Count("id")).values_list("verification", "n")
    )
    counted = responses.counted()
    span = counted.aggregate(first=Min("created"), last=Max("created"))
    items = Item.objects.filter(study=study)
    trust = dict(
        WorkerTrust.objects.filter(study=study)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    return [
        "## Counts and dates",
        "",
        f"- Items: {items.count()} ({items.filter(is_gold=True).count()} gold, "
        f"{items.filter(retired=True).count()} retired)",
        f"- Answers: {sum(by_state.values())} received; {by_state.get('verified', 0)} verified, "
        f"{by_state.get('provisional', 0)} awaiting the platform's confirmation, "
        f"{by_state.get('set_aside', 0)} set aside (never confirmed)",
        f"- Workers with a verified answer: {counted.values('worker').distinct().count()}",
        f"- Workers by gold trust: {trust.get('trusted', 0)} trusted, {trust.get('pending', 0)} pending, "
        f"{trust.get('excluded', 0)} excluded",
        f"- First verified answer: {_date(span['first'])}; last: {_date(span['last'])}",
        "",
        "These exports hold "
        + (
            "every answer received, each marked with its verification state."
            if unverified
            else "the verified answers only (a platform confirmed the worker's submission, or the provider "
            "vouched for the worker)."
        ),
        "",
        "Worker and platform ids never leave the app: each is replaced by a salted hash, stable within "
        "this installation. CSV cells that a spreadsheet would read as a formula begin with a `'`.",
    ]


def _exports_section(study: Study, unverified: bool) -> list[str]:
    """Per export the study offers: its title, files, summary and every column."""
    lines: list[str] = []
    for export in exports.offered(study):
        name = export["name"]
        lines += [
            "",
            f"### {export['title']} (`{name}.csv`, `{name}.jsonl`)",
            "",
            export["summary"] + ".",
            "",
        ]
        if name == exports.RESPONSES:
            columns = exports.response_columns(study, unverified and export["takes_unverified"], text=True)
        else:
            table = exports.tables_of(study)[name]
            columns = table.columns + (
                table.unverified_columns if unverified and table.takes_unverified else ()
            )
        lines += _columns(columns)
    return lines


def datasheet_name(study: Study) -> str:
    return f"study-{study.uid}-datasheet.md"


def zip_name(study: Study, unverified: bool = False) -> str:
    return f"study-{study.uid}-all{'-with-unverified' if unverified else ''}.zip"


def zip_bytes(study: Study, unverified: bool = False) -> bytes:
    """Every export of ``study`` in both formats and its datasheet, as one zip file; ``unverified``:
    the exports that can hold unverified answers hold them (the others are the verified ones)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(datasheet_name(study), datasheet(study, unverified))
        for export in exports.offered(study):
            with_unverified = unverified and export["takes_unverified"]
            for fmt in exports.FORMATS:
                body = "".join(exports.stream(study, export["name"], fmt, with_unverified))
                archive.writestr(exports.filename(study, export["name"], fmt, with_unverified), body)
    return buffer.getvalue()
