"""The machine side of the app: model runs, their training and explanation jobs, and what the
heat-map page shows. The numerical work is the engine's (:mod:`explain_engine`); this package
validates requests, calls the engine and stores what it returns."""

from annotate.jobs.base import set_torch_threads
from annotate.machine.errors import MachineInputError
from annotate.machine.explaining import clean_explanation_params, params_digest, run_explanations
from annotate.machine.runs import (
    architecture_choices,
    clean_params,
    create_model_run,
    dataset_records,
    queue_for,
)
from annotate.machine.training import load_trained, run_training, store_predictions

__all__ = [
    "MachineInputError",
    "architecture_choices",
    "clean_explanation_params",
    "clean_params",
    "create_model_run",
    "dataset_records",
    "load_trained",
    "params_digest",
    "queue_for",
    "run_explanations",
    "run_training",
    "set_torch_threads",
    "store_predictions",
]
