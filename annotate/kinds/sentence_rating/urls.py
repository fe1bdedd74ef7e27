"""Routes of the sentence-rating results page and its CSV tables."""

from django.urls import path, re_path

from annotate.kinds.sentence_rating import views
from annotate.kinds.sentence_rating.results import TABLES

urlpatterns = [
    path("studies/<uuid:uid>/ratings/", views.results_page, name="sentence-rating-results"),
    re_path(
        rf"^studies/(?P<uid>[0-9a-f-]{{36}})/ratings/(?P<table>{'|'.join(TABLES)})\.csv$",
        views.results_csv,
        name="sentence-rating-csv",
    ),
]
