"""Routes of the NLI pair import page, results page and exports."""

from django.urls import path, re_path

from annotate.kinds.nli_pair import views
from annotate.kinds.nli_pair.results import EXPORTS, FORMATS

urlpatterns = [
    path("nli-pairs/new/", views.import_page, name="nli-pair-import"),
    path("studies/<uuid:uid>/nli-pairs/", views.results_page, name="nli-pair-results"),
    re_path(
        rf"^studies/(?P<uid>[0-9a-f-]{{36}})/nli-pairs/(?P<what>{'|'.join(EXPORTS)})\.(?P<fmt>{'|'.join(FORMATS)})$",
        views.export,
        name="nli-pair-export",
    ),
]
