"""The data model, split by concern: corpus, studies, crowd work, machine results, jobs, the change log."""

from annotate.models.audit import ChangeLog
from annotate.models.corpus import Dataset, Document
from annotate.models.crowd import Assignment, Response, Worker
from annotate.models.dashboards import DashboardCache
from annotate.models.jobs import Job
from annotate.models.machine import Explanation, ModelRun, Prediction
from annotate.models.protocol import (
    ConsentDecision,
    ConsentVersion,
    ItemSkip,
    ResponseEdit,
    SurveyAnswers,
    TrainingAnswer,
    TrainingItem,
)
from annotate.models.providers import (
    CrowdAction,
    EntryBinding,
    Invite,
    Payment,
    PlatformSubmission,
    Publication,
)
from annotate.models.quality import GoldReview, QualityPolicy, WorkerBlock, WorkerTrust
from annotate.models.studies import Item, Study

__all__ = [
    "Assignment",
    "ChangeLog",
    "ConsentDecision",
    "ConsentVersion",
    "CrowdAction",
    "DashboardCache",
    "Dataset",
    "Document",
    "EntryBinding",
    "Explanation",
    "GoldReview",
    "Invite",
    "Item",
    "ItemSkip",
    "Job",
    "ModelRun",
    "Payment",
    "PlatformSubmission",
    "Prediction",
    "Publication",
    "QualityPolicy",
    "Response",
    "ResponseEdit",
    "Study",
    "SurveyAnswers",
    "TrainingAnswer",
    "TrainingItem",
    "Worker",
    "WorkerBlock",
    "WorkerTrust",
]
