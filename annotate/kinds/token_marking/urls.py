"""Routes of the token-marking results page and its CSV tables."""

from django.urls import path, re_path

from annotate.kinds.token_marking import views
from annotate.kinds.token_marking.results import TABLES

urlpatterns = [
    path("studies/<uuid:uid>/markings/", views.results_page, name="token-marking-results"),
    re_path(
        rf"^studies/(?P<uid>[0-9a-f-]{{36}})/markings/(?P<table>{'|'.join(TABLES)})\.csv$",
        views.results_csv,
        name="token-marking-csv",
    ),
]
