"""URL map: Django admin, and the annotate app's pages and API (one URLconf: :mod:`annotate.urls`)."""

from django.contrib import admin
from django.urls import include, path

handler404 = "annotate.api.errors.not_found"  # JSON under /api/, the usual page elsewhere
handler500 = (
    "annotate.infra.outages.server_error"  # a database or queue outage answers 503 (annotate.infra.outages)
)

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("annotate.urls")),
]
