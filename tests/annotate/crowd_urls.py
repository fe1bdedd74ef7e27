"""The project's URLs with the crowd routes (``annotate.urls_crowd``) included, for the crowd view tests."""

from django.urls import include, path

from config.urls import urlpatterns as project_urlpatterns

urlpatterns = [path("", include("annotate.urls_crowd")), *project_urlpatterns]
