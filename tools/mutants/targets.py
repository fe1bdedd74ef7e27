"""What the mutation tool (``tools/mutants/tool.py``, Cosmic Ray's operators) mutates, and against which tests.

Each target is one module that decides money, trust or results, with the test files a developer would run
after changing it. ``functions`` narrows a target to the named top-level functions and classes (the rest of the
module is another target's, or is plumbing). The order is the order of a full run: money and trust first.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    path: str
    tests: tuple[str, ...]
    area: str
    functions: tuple[str, ...] = ()


def _annotate(*names: str) -> tuple[str, ...]:
    return tuple(f"tests/annotate/{name}" for name in names)


def _engine(*names: str) -> tuple[str, ...]:
    return tuple(f"tests/engine/{name}" for name in names)


TARGETS: tuple[Target, ...] = (
    Target(
        "annotate/crowd/completion.py",
        _annotate("test_completion_share.py", "test_forged_workers.py", "test_made_up_identities.py"),
        "money: completion codes",
    ),
    Target(
        "annotate/crowd/providers/reconcile.py",
        _annotate(
            "test_reconcile.py",
            "test_forged_workers.py",
            "test_made_up_identities.py",
            "test_prolific.py",
            "test_mturk.py",
        ),
        "money: reconciliation and identity",
    ),
    Target(
        "annotate/handout/submission.py",
        _annotate(
            "test_submission.py",
            "test_trust_on_submit.py",
            "test_counted_everywhere.py",
            "test_answer_path.py",
        ),
        "money: submission",
    ),
    Target(
        "annotate/handout/assignment.py",
        _annotate(
            "test_assignment.py",
            "test_abandoned_items.py",
            "test_concurrency.py",
            "test_handout_one_trip.py",
            "test_adaptive_handout.py",
            "test_handout_queue.py",
        ),
        "money: hand-out",
    ),
    Target(
        "annotate/handout/workers.py",
        _annotate("test_invites.py", "test_submission.py", "test_pages.py", "test_worker_cookie.py"),
        "trust: worker identity",
    ),
    Target("annotate/handout/page_tokens.py", _annotate("test_risk.py", "test_api.py"), "trust: page tokens"),
    Target(
        "annotate/handout/hooks.py",
        _annotate("test_trust_on_submit.py", "test_counted.py", "test_quality.py"),
        "trust: submission hooks",
    ),
    Target(
        "annotate/crowd/providers/local/adapter.py",
        _annotate("test_invites.py"),
        "trust: invites",
    ),
    Target(
        "annotate/quality/risk.py", _annotate("test_risk.py", "test_risk_attacks.py"), "trust: risk score"
    ),
    Target(
        "annotate/quality/exclusion.py",
        _annotate("test_quality.py", "test_counted.py", "test_block_scope.py", "test_risk.py"),
        "trust: exclusion",
    ),
    Target("annotate/infra/throttle.py", _annotate("test_throttle.py"), "trust: throttles"),
    Target(
        "annotate/jobs/sweeper.py",
        _annotate("test_job_recovery.py", "test_machine_jobs.py"),
        "results: job sweeper",
    ),
    Target(
        "annotate/jobs/dispatch.py",
        _annotate("test_job_recovery.py", "test_machine_jobs.py"),
        "results: job dispatch",
    ),
    Target(
        "annotate/exports/tables.py",
        _annotate("test_exports.py", "test_kind_exports.py", "test_csvfile.py"),
        "results: exports",
    ),
    Target("annotate/infra/csvfile.py", _annotate("test_csvfile.py"), "results: CSV writer"),
    Target(
        "explain_engine/explainers/gradients.py",
        _engine("test_completeness.py"),
        "results: IG refinement",
        functions=("Completeness", "_within", "path_points", "refine_path", "completeness_of"),
    ),
    Target(
        "explain_engine/metrics/faithfulness.py",
        _engine("test_metrics_faithfulness.py"),
        "results: faithfulness",
    ),
    Target(
        "explain_engine/explainers/attention_rollout.py",
        _engine("test_attention_rollout.py"),
        "results: attention rollout",
    ),
    Target(
        "explain_engine/metrics/agreement.py",
        _engine("test_metrics_agreement.py", "test_agreement_paradigm.py"),
        "results: agreement",
    ),
    Target(
        "explain_engine/metrics/forced_choice.py",
        _engine("test_metrics_forced_choice.py", "test_kind_reports.py"),
        "results: forced-choice scoring",
    ),
)

BY_PATH = {t.path: t for t in TARGETS}
