"""URL map: the app's pages and API, the OpenAPI description, Django admin."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("annotate.urls")),
]
