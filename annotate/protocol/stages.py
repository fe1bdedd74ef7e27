"""Where a participant stands in the study's protocol, which the entry page, the done page and the
annotator API all ask: consent first, then the pre-study questionnaire and its screening, then the
training examples, then the items, then the post-study questionnaire, then the completion."""

from __future__ import annotations

from annotate.models import Study
from annotate.protocol import attention, consent, surveys, training

CONSENT = "consent"
DECLINED = "declined"
PRE_SURVEY = "pre_survey"
SCREENED_OUT = "screened_out"
TRAINING = "training"
TRAINING_FAILED = "training_failed"
ATTENTION_FAILED = "attention_failed"
WORK = "work"

#: The steps that end the study for a participant before their share: no completion, nothing counted.
LEFT = (DECLINED, SCREENED_OUT, TRAINING_FAILED, ATTENTION_FAILED)

MESSAGES = {
    CONSENT: "read and accept the study's consent first",
    DECLINED: "you declined the consent: this study has nothing more for you",
    PRE_SURVEY: "answer the questions before the study first",
    SCREENED_OUT: "this study is for participants of another profile: it has nothing for you",
    TRAINING: "finish the training examples first",
    TRAINING_FAILED: "the training examples were not passed: this study has nothing more for you",
    ATTENTION_FAILED: "you can no longer work on this study: too many attention checks were missed",
}


def before_items(study: Study, worker_id: int, ref: str) -> str:
    """The step a participant must pass before any item: one of the constants above (``WORK`` when the
    items are open to them)."""
    if consent.consent_text(study):
        made = consent.decision(study, worker_id, ref)
        if made is None:
            return CONSENT
        if not made.accepted:
            return DECLINED
    if surveys.questions(study, "pre"):
        answered = surveys.stored(study, worker_id, ref, "pre")
        if answered is None:
            return PRE_SURVEY
        if answered.qualified is False:
            return SCREENED_OUT
    trained = training.state(study, worker_id, ref)
    if trained is not None and trained.passed is not True:
        return TRAINING_FAILED if trained.passed is False else TRAINING
    if attention.failed(study, worker_id, ref):
        return ATTENTION_FAILED
    return WORK


def post_survey_pending(study: Study, worker_id: int, ref: str) -> bool:
    """Whether the participant still has the post-study questionnaire to answer."""
    return bool(surveys.questions(study, "post")) and surveys.stored(study, worker_id, ref, "post") is None
