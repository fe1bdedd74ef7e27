"""The site's URLs with the machine-side routes included, for the machine page and API tests."""

from django.urls import include, path

urlpatterns = [
    path("", include("annotate.urls_machine")),
    path("", include("config.urls")),
]
