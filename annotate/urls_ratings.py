"""Routes of the sentence_rating and token_marking results pages and their CSV tables.
Include at the site root: ``path("", include("annotate.urls_ratings"))``."""

from django.urls import path, re_path

from annotate.ratings.results import MARKING_TABLES, RATING_TABLES
from annotate.views import ratings as views

TABLES = "|".join(sorted({*RATING_TABLES, *MARKING_TABLES}))

urlpatterns = [
    path("studies/<uuid:uid>/ratings/", views.results_page, name="ratings-results"),
    re_path(
        rf"^studies/(?P<uid>[0-9a-f-]{{36}})/ratings/(?P<table>{TABLES})\.csv$",
        views.results_csv,
        name="ratings-csv",
    ),
]
