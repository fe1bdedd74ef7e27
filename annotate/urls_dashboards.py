"""Routes of the dashboards: the pages and their JSON / CSV API (include at the site root)."""

from django.urls import include, path

from annotate.api import dashboards as api
from annotate.views import dashboards as views

urlpatterns = [
    path("studies/<uuid:uid>/dashboard/", views.study_dashboard, name="study-dashboard"),
    path(
        "studies/<uuid:uid>/dashboard/machine/", views.similarity_dashboard, name="study-dashboard-similarity"
    ),
    path("studies/<uuid:uid>/dashboard/texts/<int:item>/", views.text_dashboard, name="study-dashboard-text"),
    path("api/", include(api.urlpatterns)),
]
