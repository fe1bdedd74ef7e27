"""The quality dashboard of a study, for its owner and admins (gold questions and the 70 % trust
threshold of Pappas & Popescu-Belis 2016 §3, as Lertvittayakumjorn & Toni 2019 §4 use them).

Per worker: golds seen and passed, trust with its Wilson interval, status, time per item, the
behaviour signals (fast answers, focus changes, pastes) and the risk score with its reasons
(:mod:`annotate.quality.risk`), with block / unblock / exclude / keep in / bonus. Per gold item:
how often it is missed, overall and by trusted workers, flagged when most trusted workers miss it, with
keep / fix / retire (each re-grades). The quality policy, flagged platform submissions (approve /
reject by hand), a full re-grade, and the aggregated labels (majority, Dawid-Skene, confidence) as CSV
or JSON lines. The same numbers as JSON: :class:`annotate.api.quality.QualityAPI`.
"""

from __future__ import annotations

import json
import secrets
from decimal import Decimal, InvalidOperation
from functools import wraps

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect, render
from rest_framework.exceptions import ValidationError

from annotate.access import owned_or_404, researcher_required
from annotate.crowd import blocks
from annotate.crowd.providers.base.retry import ProviderConfigError, platform_errors
from annotate.crowd.providers.reconcile import review_submission, send_bonus
from annotate.infra import csvfile
from annotate.infra.json_input import JSONInputError, parse_json
from annotate.models import Item, PlatformSubmission, QualityPolicy, Study, Worker
from annotate.protocol import attention
from annotate.quality import aggregation, exclusion, gold_review, grading, redundancy
from annotate.quality.gold_import import answer_errors
from annotate.quality.gold_mixing import set_gold_rate
from annotate.quality.policy import applied_rule, policy_for
from annotate.quality.report import gold_rows, worker_rows
from annotate.quality.risk import study_risks
from annotate.tasks import get_kind
from annotate.tasks.base import GOLD_RATE_KEY


def post_only(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        return view(request, *args, **kwargs)

    return wrapper


class PolicyForm(forms.ModelForm):
    """The study's quality policy, and its gold rate (kept in the study's config, where the hand-out
    reads it: :mod:`annotate.quality.gold_mixing`)."""

    gold_rate = forms.FloatField(
        min_value=0,
        max_value=1,
        required=False,
        label="Gold rate",
        help_text="Share of gold items mixed into each annotator's queue. Empty: golds keep their queue places.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial["gold_rate"] = self.instance.study.config.get(GOLD_RATE_KEY)

    def save(self, commit: bool = True):
        policy = super().save(commit)
        set_gold_rate(policy.study, self.cleaned_data.get("gold_rate"))
        return policy

    class Meta:
        model = QualityPolicy
        fields = [
            "trust_threshold",
            "min_golds",
            "confidence",
            "excluded_action",
            "block_mode",
            "review",
            "rejection_feedback",
            "fast_ratio",
            "gold_flag_min_trusted",
            "gold_flag_miss_rate",
            "max_wpm",
            "risk_threshold",
            "risk_action",
        ]
        # The rule as applied (annotate.quality.policy.AppliedRule), where the model's help says less.
        help_texts = {
            "min_golds": "Golds a worker answers before their trust decides; in a study with fewer golds in use, "
            "after all of them.",
            "gold_flag_min_trusted": "Trusted workers who must have seen a gold before it can be flagged; at most "
            "as many as have answered in the study.",
        }


def study_or_404(request, uid) -> Study:
    """The study's quality page is its owner's, and every admin's."""
    return owned_or_404(Study.objects.all(), request.user, uid=uid)


@researcher_required
def dashboard(request, uid, form: PolicyForm | None = None, status: int = 200):
    study = study_or_404(request, uid)
    grading.refresh_trust(study)
    risks = study_risks(study)
    exclusion.apply_risk(study, risks)
    golds = gold_rows(study)
    kind = get_kind(study.kind)
    items = Item.objects.filter(study=study, is_gold=True).in_bulk()
    for gold in golds:
        item = items.get(gold["item"])
        gold["described"] = (
            kind.describe_gold(item, gold["gold"]) if item is not None and gold["gold"] else ""
        )
    context = {
        "study": study,
        "policy": policy_for(study),
        "rule": applied_rule(study),
        "form": form or PolicyForm(instance=policy_for(study)),
        "workers": worker_rows(study, risks),
        "golds": golds,
        "flagged_golds": sum(g["flagged"] for g in golds),
        "flagged_submissions": PlatformSubmission.objects.filter(
            study=study, state="flagged", decision_sent=False
        )
        .select_related("worker")
        .order_by("id"),
        "bonus_key": secrets.token_hex(12),
        "attention_checks": attention.check_rows(study),
        "attention_setting": attention.settings_of(study),
    }
    return render(request, "annotate/quality/dashboard.html", context, status=status)


@researcher_required
@post_only
def policy_update(request, uid):
    study = study_or_404(request, uid)
    form = PolicyForm(request.POST, instance=policy_for(study))
    if not form.is_valid():
        return dashboard(request, uid, form=form, status=400)
    form.save()
    grading.refresh_trust(study)
    messages.success(request, "Quality policy saved; trust recomputed.")
    return redirect("quality-dashboard", uid=study.uid)


def _bad_request(field: str, message: str) -> HttpResponse:
    """A 400 naming the field, for a form value no browser sends from this page (its input is checked there)."""
    return HttpResponse(f"{field}: {message}", status=400, content_type="text/plain; charset=utf-8")


@researcher_required
@post_only
def worker_action(request, uid, worker_id: int, action: str):
    study = study_or_404(request, uid)
    worker = get_object_or_404(Worker.objects.filter(responses__study=study).distinct(), pk=worker_id)
    errors: list[str] = []
    if action == "block":
        errors = blocks.block(
            study, worker, request.POST.get("reason") or exclusion.AUTO_REASON, actor=request.user
        )
    elif action == "unblock":
        errors = blocks.unblock(study, worker, actor=request.user)
    elif action in ("exclude", "include"):
        exclusion.set_risk_exclusion(study, worker, exclude=action == "exclude")
        redundancy.refresh_for_workers(study, [worker.pk])  # their items may stop or reopen
    elif action == "bonus":
        try:
            amount = Decimal(request.POST.get("amount", ""))
            send_bonus(study, worker, amount, request.POST.get("reason", ""), request.POST.get("key", ""))
        except InvalidOperation:
            return _bad_request("amount", "must be a number such as 0.50")
        except ProviderConfigError as exc:
            if exc.field == "amount":
                return _bad_request(exc.field, exc.message)
            errors = [f"{exc.field}: {exc.message}"]
        except platform_errors() as exc:
            errors = [str(exc)]
    else:
        raise PermissionDenied(f"unknown action {action!r}")
    for error in errors:
        messages.error(request, f"{action}: {error}")
    if not errors:
        messages.success(request, f"{action}: done for {worker.pseudonym_for(study.owner_id)}")
    return redirect("quality-dashboard", uid=study.uid)


@researcher_required
@post_only
def gold_action(request, uid, item_id: int, action: str):
    study = study_or_404(request, uid)
    item = get_object_or_404(Item.objects.select_related("study"), pk=item_id, study=study, is_gold=True)
    note = request.POST.get("note", "")
    if action == "keep":
        gold_review.keep_gold(item, note)
    elif action == "retire":
        gold_review.retire_gold(item, note)
    elif action == "fix":
        try:
            gold = parse_json(
                request.POST.get("gold", ""),
                max_bytes=settings.HATLAB_SUBMISSION_MAX_BYTES,
                max_depth=settings.HATLAB_JSON_MAX_DEPTH,
                what="the gold answer",
            )
            gold_review.fix_gold(item, gold, note)
        except JSONInputError:
            messages.error(
                request,
                "The gold answer could not be read. Change it in the gold editor, with the worker's own controls.",
            )
            return redirect("quality-dashboard", uid=study.uid)
        except ValidationError as exc:
            messages.error(request, answer_errors(exc.detail))
            return redirect("quality-dashboard", uid=study.uid)
    else:
        raise PermissionDenied(f"unknown action {action!r}")
    exclusion.apply_local(study, grading.refresh_trust(study))
    messages.success(request, f"gold {item.pk}: {action} done; answers re-graded")
    return redirect("quality-dashboard", uid=study.uid)


@researcher_required
@post_only
def regrade(request, uid):
    study = study_or_404(request, uid)
    changed = grading.regrade_study(study)
    summary = blocks.apply_quality(study)
    gold_review.review_golds(study)
    messages.success(
        request, f"re-graded: {changed} grade(s) changed, {len(summary.changes)} status change(s)"
    )
    for error in summary.errors:
        messages.error(request, error)
    return redirect("quality-dashboard", uid=study.uid)


@researcher_required
@post_only
def submission_review(request, uid, pk: int, decision: str):
    study = study_or_404(request, uid)
    submission = get_object_or_404(PlatformSubmission, pk=pk, study=study)
    try:
        review_submission(submission, decision, request.POST.get("feedback", ""))
    except ProviderConfigError as exc:
        messages.error(request, f"{decision}: {exc.field} {exc.message}")
    except platform_errors() as exc:
        messages.error(request, f"{decision}: {exc}")
    else:
        messages.success(request, f"{decision}: sent")
    return redirect("quality-dashboard", uid=study.uid)


@researcher_required
def aggregate_export(request, uid, fmt: str):
    """Aggregated labels per item: majority, trust-weighted confidence, Dawid-Skene label and probability."""
    study = study_or_404(request, uid)
    rows = list(aggregation.aggregation_rows(study))
    if fmt == "jsonl":
        body = "".join(json.dumps(r, default=str) + "\n" for r in rows)
        response = HttpResponse(body, content_type="application/x-ndjson")
    else:
        fields = list(aggregation.FIELDS)
        table = [[json.dumps(r[f]) if f == "labels" else r.get(f) for f in fields] for r in rows]
        body = csvfile.csv_text(fields, table, lineterminator="\r\n")
        response = HttpResponse(body, content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="study-{study.uid}-aggregated.{fmt}"'
    return response
