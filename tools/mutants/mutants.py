"""Hand-made mutants of the hand-out, submission, agreement and forced-choice code: each one a bug
that the suite must catch, written as an exact replacement of source text so that a change to the
source makes the mutant fail loudly ("pattern not found") instead of silently testing nothing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str


ASSIGNMENT = "annotate/handout/assignment.py"
SUBMISSION = "annotate/handout/submission.py"
AGREEMENT = "explain_engine/metrics/agreement.py"
FORCED_CHOICE = "explain_engine/metrics/forced_choice.py"
FC_RESULTS = "annotate/kinds/forced_choice/results.py"

T_ASSIGNMENT = "tests/annotate/test_assignment.py"
T_ABANDONED = "tests/annotate/test_abandoned_items.py"
T_SUBMISSION = "tests/annotate/test_submission.py"
T_BOOT = "tests/engine/test_bootstrap_intervals_resampled.py"
T_AGREEMENT = "tests/engine/test_metrics_agreement.py"
T_FC_ENGINE = "tests/engine/test_metrics_forced_choice.py"
T_FC_SCORING = "tests/annotate/kinds/forced_choice/test_scoring.py"
T_FC_FILTERS = "tests/annotate/kinds/forced_choice/test_filters.py"
T_COUNTED = "tests/annotate/test_counted.py"

MUTANTS: tuple[Mutant, ...] = (
    # ------------------------------------------------------------------------------- the hand-out
    Mutant(
        "handout-sql-never-twice-dropped",
        ASSIGNMENT,
        "      AND NOT EXISTS (SELECT 1 FROM {_A} a WHERE a.item_id = i.id AND a.worker_id = $2\n"
        "                      AND (NOT a.provisional OR a.provider_assignment_id = $6))\n",
        "",
        (T_ABANDONED,),
        "PostgreSQL candidate query forgets the items the worker was already given",
    ),
    Mutant(
        "handout-orm-never-twice-dropped",
        ASSIGNMENT,
        "        .exclude(Exists(had))\n",
        "",
        (T_ABANDONED,),
        "the portable (SQLite) candidate query forgets the items the worker was already given",
    ),
    Mutant(
        "handout-sql-slot-off-by-one",
        ASSIGNMENT,
        "FROM generate_series(0, $7 - 1{{beyond}}) AS s(slot)",
        "FROM generate_series(1, $7{{beyond}}) AS s(slot)",
        (T_ASSIGNMENT,),
        "slots numbered 1..N instead of 0..N-1",
    ),
    Mutant(
        "handout-orm-slot-off-by-one",
        ASSIGNMENT,
        "free = next((s for s in range(needed + (len(used) if overflow else 0)) if s not in used), None)",
        "free = next((s for s in range(1, needed + 1 + (len(used) if overflow else 0)) if s not in used), None)",
        (T_ABANDONED,),
        "the portable path numbers slots 1..N",
    ),
    Mutant(
        "handout-releases-live-assignments",
        ASSIGNMENT,
        "WHERE study_id = $1 AND status = '{ASSIGNED}' AND expires_at < $3",
        "WHERE study_id = $1 AND status = '{ASSIGNED}' AND expires_at > $3",
        (T_ASSIGNMENT,),
        "the expiry comparison turned round: open assignments are released, expired ones kept",
    ),
    Mutant(
        "handout-second-open-assignment",
        ASSIGNMENT,
        "      AND NOT EXISTS (SELECT 1 FROM {_A} h WHERE h.worker_id = $2 AND h.study_id = $1"
        " AND h.status = '{ASSIGNED}'\n                      AND h.provider_assignment_id = $6)\n",
        "      AND $6::text IS NOT NULL\n",
        (T_ASSIGNMENT,),
        "a worker holding an open assignment is given another one",
    ),
    Mutant(
        "handout-open-assignment-across-units",
        ASSIGNMENT,
        "                      AND h.provider_assignment_id = $6)\n",
        "                      AND $6::text IS NOT NULL)\n",
        (T_ASSIGNMENT,),
        "an open assignment taken under one platform unit keeps the worker's other session from any item",
    ),
    Mutant(
        "handout-item-cap-off-by-one",
        ASSIGNMENT,
        "AND ($5::integer IS NULL OR $5 > {_DONE})",
        "AND ($5::integer IS NULL OR $5 >= {_DONE})",
        (T_ASSIGNMENT,),
        "max_items_per_worker lets one item too many through",
    ),
    # ------------------------------------------------------------------------------- submission
    Mutant(
        "submit-idempotency-key-ignored",
        SUBMISSION,
        "if prior is not None and prior[1] == key:",
        "if prior is not None:",
        (T_SUBMISSION,),
        "a second, different submission to a submitted assignment is answered as a repeat",
    ),
    Mutant(
        "submit-key-reused-across-assignments",
        SUBMISSION,
        "if prior is not None and str(prior[1]) == str(assignment_uid):",
        "if prior is not None:",
        (T_SUBMISSION,),
        "a key already used for another assignment returns that other response",
    ),
    Mutant(
        "submit-any-worker",
        SUBMISSION,
        "seat = None if row is None else _seat(holders, row[12], row[2], row[15])",
        "seat = None if row is None else Seat(row[2], None)",
        (T_SUBMISSION,),
        "someone else's assignment can be submitted (fast path)",
    ),
    Mutant(
        "submit-any-platform-unit",
        "annotate/handout/workers.py",
        "return worker_id == self.worker_id and self.ref in (None, ref)",
        "return worker_id == self.worker_id",
        (T_SUBMISSION,),
        "a session submits an assignment its worker took under another platform unit (another browser)",
    ),
    Mutant(
        "submit-after-finish",
        SUBMISSION,
        "    if row[13] == Study.Status.FINISHED and not allow_finished:\n",
        "    if False:\n",
        (T_SUBMISSION,),
        "a finished study still takes new answers (fast path)",
    ),
    Mutant(
        "submit-not-counted",
        SUBMISSION,
        "UPDATE {_I} SET responses_done = responses_done + 1 WHERE id = $3",
        "UPDATE {_I} SET responses_done = responses_done WHERE id = $3",
        (T_SUBMISSION,),
        "a stored response is not counted on its item",
    ),
    Mutant(
        "submit-general-path-leaves-assignment-open",
        SUBMISSION,
        "Assignment.objects.filter(pk=assignment.pk).update(status=SUBMITTED, submitted_at=now, **confirmed)",
        "Assignment.objects.filter(pk=assignment.pk).update(submitted_at=now, **confirmed)",
        (T_SUBMISSION,),
        "a late answer to a released slot is stored but its assignment is not marked submitted",
    ),
    # ------------------------------------------------------------------------------- agreement
    Mutant(
        "fleiss-pbar-unweighted",
        AGREEMENT,
        "p_bar = (w @ p_item) / w.sum(axis=1)",
        "p_bar = np.full(w.shape[0], p_item.mean())",
        (T_BOOT + "::test_fleiss_interval_on_part7_equals_the_formula_on_the_same_resamples",),
        "the Fleiss bootstrap ignores the resample weights for P̄ (the interval shrinks)",
    ),
    Mutant(
        "fleiss-item-agreement-denominator",
        AGREEMENT,
        "p_item = ((t * t).sum(axis=1) - n_i) / (n_i * (n_i - 1.0))",
        "p_item = ((t * t).sum(axis=1) - n_i) / (n_i * n_i)",
        (T_AGREEMENT,),
        "per-item agreement over n² instead of n(n − 1) rater pairs",
    ),
    Mutant(
        "cohen-linear-is-quadratic",
        AGREEMENT,
        'if weights == "linear":\n        return np.abs(pos[:, None] - pos[None, :])',
        'if weights == "linear":\n        return (pos[:, None] - pos[None, :]) ** 2',
        (T_BOOT + "::test_weighted_kappa_interval_on_highlight_bands_equals_sklearn",),
        "linear Cohen weights computed as quadratic (point value from scikit-learn hides it)",
    ),
    Mutant(
        "cohen-quadratic-is-linear",
        AGREEMENT,
        'if weights == "quadratic":\n        return (pos[:, None] - pos[None, :]) ** 2',
        'if weights == "quadratic":\n        return np.abs(pos[:, None] - pos[None, :])',
        (T_BOOT + "::test_weighted_kappa_interval_on_highlight_bands_equals_sklearn",),
        "quadratic Cohen weights computed as linear",
    ),
    # ------------------------------------------------------------------------------- forced choice
    Mutant(
        "forced-choice-score-sign",
        FORCED_CHOICE,
        "np.where(none, 0.0, np.where(right, magnitude, -magnitude))",
        "np.where(none, 0.0, np.where(right, -magnitude, magnitude))",
        (T_FC_ENGINE,),
        "right answers score negative, wrong ones positive",
    ),
    Mutant(
        "forced-choice-unconfident-scores-one",
        FORCED_CHOICE,
        "magnitude = np.where(np.asarray(confident, dtype=bool), 1.0, 0.5)",
        "magnitude = np.where(np.asarray(confident, dtype=bool), 1.0, 1.0)",
        (T_FC_ENGINE,),
        "an unconfident answer scores ±1 instead of ±0.5",
    ),
    Mutant(
        "forced-choice-no-preference-scored",
        FORCED_CHOICE,
        'return picked is None or picked == "" or picked == NO_PREFERENCE',
        'return picked is None or picked == ""',
        (T_FC_ENGINE,),
        '"no preference" is scored as a wrong answer instead of 0',
    ),
    Mutant(
        "forced-choice-results-count-gold",
        FC_RESULTS,
        "Response.objects.filter(study=study, item__is_gold=False, item__retired=False)",
        "Response.objects.filter(study=study, item__retired=False)",
        (T_FC_FILTERS,),
        "forced-choice results count answers to gold items",
    ),
    Mutant(
        "forced-choice-results-count-retired",
        FC_RESULTS,
        "Response.objects.filter(study=study, item__is_gold=False, item__retired=False)",
        "Response.objects.filter(study=study, item__is_gold=False)",
        (T_FC_FILTERS,),
        "forced-choice results count answers to retired items",
    ),
    Mutant(
        "forced-choice-results-count-excluded-workers",
        FC_RESULTS,
        "        .exclude(worker_id__in=excluded_worker_ids(study))\n",
        "",
        (T_FC_SCORING + "::test_excluded_workers_and_gold_items_are_left_out",),
        "answers of workers excluded by their gold trust are counted",
    ),
    Mutant(
        "forced-choice-results-count-unverified",
        FC_RESULTS,
        "        .counted()\n        .exclude(worker_id__in=excluded_worker_ids(study))\n",
        "        .exclude(worker_id__in=excluded_worker_ids(study))\n",
        (T_COUNTED + "::test_forced_choice_scores_leave_unverified_answers_out",),
        "provisional and set-aside answers are scored",
    ),
)
