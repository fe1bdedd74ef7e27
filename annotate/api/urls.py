"""API routes, under ``/api/``, and what the OpenAPI schema describes: every route of the project
plus the DRF twins of the annotator endpoints' lean views (see :mod:`annotate.api.work`)."""

from django.urls import get_resolver, path
from rest_framework.routers import SimpleRouter

from annotate.api import views, work

router = SimpleRouter()
router.register("datasets", views.DatasetViewSet, basename="api-dataset")
router.register("studies", views.StudyViewSet, basename="api-study")

NEXT = "work/<uuid:study_uid>/next/"
SUBMIT = "work/assignments/<uuid:assignment_uid>/submit/"

# The annotator endpoints (NEXT, SUBMIT) are routed at the top of annotate/urls.py, the busiest first.
urlpatterns = router.urls

_described = [path(f"api/{NEXT}", work.NextView.as_view()), path(f"api/{SUBMIT}", work.SubmitView.as_view())]


def schema_patterns() -> list:
    """The project's URL patterns with the annotator endpoints described by their DRF twins."""
    return [*get_resolver().url_patterns, *_described]
