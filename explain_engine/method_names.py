"""Names the web app shows beside the explanation methods, kept apart from :mod:`explain_engine.explainers`
so that reading them does not load torch."""

from __future__ import annotations

#: The name a model's own attention is stored under when it is trained (``TrainedModel.predict``
#: returns it with each prediction): shown beside the registered methods, though it is not one of them.
TRAINING_ATTENTION = "attention (training)"
