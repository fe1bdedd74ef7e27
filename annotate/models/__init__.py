"""The data model, split by concern: corpus, studies, crowd work, machine results, jobs."""

from annotate.models.corpus import Dataset, Document
from annotate.models.crowd import Assignment, Response, Worker
from annotate.models.jobs import Job
from annotate.models.machine import Explanation, ModelRun, Prediction
from annotate.models.studies import Item, Study

__all__ = [
    "Assignment",
    "Dataset",
    "Document",
    "Explanation",
    "Item",
    "Job",
    "ModelRun",
    "Prediction",
    "Response",
    "Study",
    "Worker",
]
