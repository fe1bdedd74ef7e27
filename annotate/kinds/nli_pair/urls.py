"""The NLI pair kind's own route: the import page."""

from django.urls import path

from annotate.kinds.nli_pair import views

urlpatterns = [
    path("nli-pairs/new/", views.import_page, name="nli-pair-import"),
]
