"""The forced-choice family's own routes: the new-study form, the question preview and the results as JSON."""

from django.urls import path

from annotate.kinds.forced_choice import api, views

urlpatterns = [
    path("forced-choice/new/", views.new_study, name="forced-choice-new"),
    path(
        "api/studies/<uuid:uid>/forced-choice/",
        api.ForcedChoiceResultsView.as_view(),
        name="api-forced-choice-results",
    ),
    path("api/forced-choice/preview/", api.QuestionPreviewView.as_view(), name="api-forced-choice-preview"),
]
