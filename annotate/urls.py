"""Pages and API of the annotate app (URL names are global: ``home``, ``login``, ``study-detail``, ...)."""

from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from annotate.api import urls as api_urls
from annotate.api import work as work_api
from annotate.views import datasets, docs, home, studies, work

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

urlpatterns = [
    # first: the annotator API is the busiest route
    path(f"api/{api_urls.NEXT}", work_api.next_view, name="api-work-next"),
    path(f"api/{api_urls.SUBMIT}", work_api.submit_view, name="api-work-submit"),
    path("", home.home, name="home"),
    path("login/", auth_views.LoginView.as_view(template_name="annotate/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("datasets/", datasets.dataset_list, name="dataset-list"),
    path("datasets/<int:pk>/", datasets.dataset_detail, name="dataset-detail"),
    path("studies/", studies.study_list, name="study-list"),
    path("studies/new/", studies.study_create, name="study-create"),
    path("studies/<uuid:uid>/", studies.study_detail, name="study-detail"),
    path("studies/<uuid:uid>/invites/", studies.study_invites, name="study-invites"),
    re_path(
        rf"^studies/(?P<uid>{UUID})/(?P<action>start|pause|finish)/$",
        studies.study_action,
        name="study-action",
    ),
    re_path(
        rf"^studies/(?P<uid>{UUID})/export/(?P<what>responses|items)\.(?P<fmt>csv|jsonl)$",
        studies.study_export,
        name="study-export",
    ),
    path("w/<uuid:study_uid>/", work.entry, name="work-entry"),
    path("w/<uuid:study_uid>/done/", work.done, name="work-done"),
    path("api/schema/", docs.SchemaView.as_view(), name="api-schema"),
    path("api/docs/", docs.api_docs, name="api-docs"),
    path("api/", include("annotate.api.urls")),
]
