"""Every API route, under ``/api/``: the annotator endpoints first (the busiest), then the researchers'
datasets and studies, the machine side, the dashboards, the crowd platform and quality, the schema."""

from django.urls import path, re_path
from rest_framework.routers import SimpleRouter

from annotate.api import (
    crowd,
    dashboards,
    machine,
    quality,
    schema,
    views,
    work,
    work_controls,
    work_training,
)
from annotate.crowd.publishing import ACTIONS
from annotate.tasks.routes import UUID

CROWD_ACTIONS = "|".join(ACTIONS)

router = SimpleRouter()
router.register("datasets", views.DatasetViewSet, basename="api-dataset")
router.register("studies", views.StudyViewSet, basename="api-study")
router.register("model-runs", machine.ModelRunViewSet, basename="api-model-run")
router.register("predictions", machine.PredictionViewSet, basename="api-prediction")
router.register("explanations", machine.ExplanationViewSet, basename="api-explanation")
router.register("jobs", machine.JobViewSet, basename="api-job")

urlpatterns = [
    path(work.NEXT, work.next_view, name="api-work-next"),
    path(work.SUBMIT, work.submit_view, name="api-work-submit"),
    path(work_controls.SKIP, work_controls.skip_view, name="api-work-skip"),
    path(work_controls.EDIT, work_controls.edit_view, name="api-work-edit"),
    path(work_controls.PREVIOUS, work_controls.previous_view, name="api-work-previous"),
    path(work_training.TRAINING_NEXT, work_training.training_next_view, name="api-work-training-next"),
    path(work_training.TRAINING_ANSWER, work_training.training_answer_view, name="api-work-training-answer"),
    *router.urls,
    path(
        "dashboards/studies/<uuid:uid>/", dashboards.StudyDashboardView.as_view(), name="api-dashboard-study"
    ),
    path(
        "dashboards/studies/<uuid:uid>/csv/<slug:name>.csv",
        dashboards.StudyDashboardCsvView.as_view(),
        name="api-dashboard-study-csv",
    ),
    path(
        "dashboards/studies/<uuid:uid>/machine-options/",
        dashboards.MachineOptionsView.as_view(),
        name="api-dashboard-machine-options",
    ),
    path(
        "dashboards/studies/<uuid:uid>/similarity/",
        dashboards.SimilarityView.as_view(),
        name="api-dashboard-similarity",
    ),
    path(
        "dashboards/studies/<uuid:uid>/similarity/csv/<slug:name>.csv",
        dashboards.SimilarityCsvView.as_view(),
        name="api-dashboard-similarity-csv",
    ),
    path(
        "dashboards/studies/<uuid:uid>/texts/<int:item>/",
        dashboards.TextView.as_view(),
        name="api-dashboard-text",
    ),
    path("crowd/studies/<uuid:uid>/", crowd.CrowdStudyAPI.as_view(), name="api-crowd-study"),
    re_path(
        rf"^crowd/studies/(?P<uid>{UUID})/(?P<action>{CROWD_ACTIONS})/$",
        crowd.CrowdActionAPI.as_view(),
        name="api-crowd-action",
    ),
    path("crowd/studies/<uuid:uid>/quality/", quality.QualityAPI.as_view(), name="api-crowd-quality"),
    re_path(
        rf"^crowd/studies/(?P<uid>{UUID})/quality/workers/(?P<worker_id>\d+)/(?P<action>exclude|include)/$",
        quality.QualityWorkerAPI.as_view(),
        name="api-crowd-quality-worker",
    ),
    path("schema/", schema.SchemaView.as_view(), name="api-schema"),
]
