"""Routes of the machine side: model-run pages and their JSON API (include at the site root)."""

from django.urls import include, path

from annotate.api import machine as api
from annotate.views import machine as views

urlpatterns = [
    path("models/", views.model_run_list, name="model-run-list"),
    path("models/new/", views.model_run_create, name="model-run-create"),
    path("models/<int:pk>/", views.model_run_detail, name="model-run-detail"),
    path("models/<int:pk>/train/", views.model_run_train, name="model-run-train"),
    path("models/<int:pk>/explain/", views.model_run_explain, name="model-run-explain"),
    path("models/<int:pk>/documents/<int:document_pk>/", views.model_run_heatmap, name="model-run-heatmap"),
    path("api/", include(api.urlpatterns)),
]
