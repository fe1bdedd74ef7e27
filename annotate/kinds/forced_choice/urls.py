"""Routes of the forced-choice evaluation: the new-study form, a study's results page and CSV tables,
and their JSON API."""

from django.urls import path, re_path

from annotate.kinds.forced_choice import api, views
from annotate.kinds.forced_choice.results import TABLES

urlpatterns = [
    path("evaluation/new/", views.new_study, name="evaluation-new"),
    path("studies/<uuid:uid>/evaluation/", views.results_page, name="evaluation-results"),
    re_path(
        rf"^studies/(?P<uid>[0-9a-f-]{{36}})/evaluation/(?P<table>{'|'.join(TABLES)})\.csv$",
        views.results_csv,
        name="evaluation-csv",
    ),
    path(
        "api/studies/<uuid:uid>/evaluation/",
        api.EvaluationResultsView.as_view(),
        name="api-evaluation-results",
    ),
    path("api/evaluation/preview/", api.QuestionPreviewView.as_view(), name="api-evaluation-preview"),
]
