"""URL map: the app's pages and API (one module per concern), Django admin."""

from django.contrib import admin
from django.urls import include, path

from annotate.tasks import task_urlpatterns

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("annotate.urls")),
    path("", include("annotate.urls_machine")),
    path("", include("annotate.urls_dashboards")),
    path("", include("annotate.urls_crowd")),
    path("", include(task_urlpatterns())),
]
