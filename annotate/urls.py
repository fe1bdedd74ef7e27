"""Every route of the annotate app: its pages here, every API route under ``api/`` (:mod:`annotate.api.urls`).

URL names are global: ``home``, ``login``, ``study-detail``, ``api-work-next``, ...
"""

from django.urls import include, path, re_path

from annotate.api.schema import schema_patterns
from annotate.crowd.publishing import ACTIONS
from annotate.tasks import task_urlpatterns
from annotate.tasks.routes import TABLE_FORMATS, UUID
from annotate.views import (
    account_admin,
    admin_quality,
    dashboards,
    datasets,
    docs,
    drafts,
    golds,
    home,
    lexicon,
    machine,
    protocol,
    publish,
    results,
    studies,
    study_exports,
    work,
)
from annotate.views.accounts import LoginView, LogoutView

CROWD_ACTIONS = "|".join(ACTIONS)

urlpatterns = [
    # first: the annotator API is the busiest route
    path("api/", include("annotate.api.urls")),
    path("", home.home, name="home"),
    path("favicon.ico", home.favicon, name="favicon"),
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", LogoutView.as_view(), name="logout"),
    # accounts: the admin's page, and the set-password page of a one-time link
    path("accounts/", account_admin.account_list, name="account-list"),
    path("accounts/invite/", account_admin.account_invite, name="account-invite"),
    path("accounts/<int:pk>/reset/", account_admin.account_reset, name="account-reset"),
    path("accounts/<int:pk>/deactivate/", account_admin.account_deactivate, name="account-deactivate"),
    path("accounts/<int:pk>/reactivate/", account_admin.account_reactivate, name="account-reactivate"),
    path(
        "accounts/invites/<int:pk>/revoke/", account_admin.account_invite_revoke, name="account-invite-revoke"
    ),
    path(
        "accounts/set-password/<uidb64>/<token>/",
        account_admin.SetPasswordView.as_view(),
        name="account-set-password",
    ),
    path("api/docs/", docs.api_docs, {"patterns": schema_patterns}, name="api-docs"),
    # datasets and studies
    path("datasets/", datasets.dataset_list, name="dataset-list"),
    path("datasets/<int:pk>/", datasets.dataset_detail, name="dataset-detail"),
    path("datasets/<int:pk>/rename/", datasets.dataset_rename, name="dataset-rename"),
    path("datasets/<int:pk>/delete/", datasets.dataset_delete, name="dataset-delete"),
    path("datasets/rationales/", datasets.rationale_import, name="dataset-rationale-import"),
    path("studies/", studies.study_list, name="study-list"),
    path("studies/new/", studies.study_create, name="study-create"),
    path("studies/<uuid:uid>/", studies.study_detail, name="study-detail"),
    path("studies/<uuid:uid>/invites/", studies.study_invites, name="study-invites"),
    path("studies/<uuid:uid>/invites.csv", studies.study_invites_csv, name="study-invites-csv"),
    path(
        "studies/<uuid:uid>/invites/<int:pk>/revoke/", studies.study_invite_revoke, name="study-invite-revoke"
    ),
    path("studies/<uuid:uid>/edit/", drafts.study_edit, name="study-edit"),
    path("studies/<uuid:uid>/delete/", drafts.study_delete, name="study-delete"),
    path("studies/<uuid:uid>/clone/", drafts.study_clone, name="study-clone"),
    path("studies/<uuid:uid>/finish/confirm/", drafts.study_finish, name="study-finish"),
    path("studies/<uuid:uid>/golds/", golds.golds_page, name="study-golds"),
    path("studies/<uuid:uid>/protocol/", protocol.study_protocol, name="study-protocol"),
    path("studies/<uuid:uid>/golds/prepare/", golds.golds_prepare, name="study-golds-prepare"),
    path("studies/<uuid:uid>/golds/import/", golds.golds_import, name="study-golds-import"),
    path("studies/<uuid:uid>/golds/<int:item_id>/", golds.gold_editor, name="study-gold-editor"),
    path("studies/<uuid:uid>/golds/<int:item_id>/item/", golds.gold_item, name="study-gold-item"),
    path("studies/<uuid:uid>/golds/<int:item_id>/save/", golds.gold_save, name="study-gold-save"),
    path("studies/<uuid:uid>/golds/<int:item_id>/remove/", golds.gold_remove, name="study-gold-remove"),
    re_path(
        rf"^studies/(?P<uid>{UUID})/(?P<action>start|pause|finish)/$",
        studies.study_action,
        name="study-action",
    ),
    re_path(
        rf"^studies/(?P<uid>{UUID})/export/(?P<what>[a-z_]+)\.(?P<fmt>csv|jsonl)$",
        study_exports.study_export,
        name="study-export",
    ),
    path("studies/<uuid:uid>/export/datasheet.md", study_exports.study_datasheet, name="study-datasheet"),
    path("studies/<uuid:uid>/export/all.zip", study_exports.study_export_all, name="study-export-all"),
    re_path(
        rf"^studies/(?P<uid>{UUID})/export/rationales-(?P<fmt>eraser|hf)\.zip$",
        study_exports.study_rationales,
        name="study-rationales",
    ),
    # every kind's results page and its tables (the kind's results class, annotate/tasks/results.py)
    path("studies/<uuid:uid>/results/", results.results_page, name="study-results"),
    re_path(
        rf"^studies/(?P<uid>{UUID})/results/(?P<table>[a-z0-9_-]+)\.(?P<fmt>{'|'.join(TABLE_FORMATS)})$",
        results.results_table,
        name="study-results-table",
    ),
    # the annotator's pages
    path("w/<uuid:study_uid>/", work.entry, name="work-entry"),
    path("w/<uuid:study_uid>/done/", work.done, name="work-done"),
    path("w/<uuid:study_uid>/consent/", protocol.consent_view, name="work-consent"),
    path("w/<uuid:study_uid>/survey/<str:phase>/", protocol.survey_view, name="work-survey"),
    # dashboards
    path("studies/<uuid:uid>/dashboard/", dashboards.study_dashboard, name="study-dashboard"),
    path(
        "studies/<uuid:uid>/dashboard/machine/",
        dashboards.similarity_dashboard,
        name="study-dashboard-similarity",
    ),
    path(
        "studies/<uuid:uid>/dashboard/texts/<int:item>/",
        dashboards.text_dashboard,
        name="study-dashboard-text",
    ),
    # the crowd platform and the admin's quality dashboard
    path("studies/<uuid:uid>/crowd/", publish.crowd_page, name="crowd-page"),
    path("studies/<uuid:uid>/crowd/settings/", publish.crowd_settings, name="crowd-settings"),
    path("studies/<uuid:uid>/crowd/preview/", publish.crowd_preview, name="crowd-preview"),
    re_path(
        rf"^studies/(?P<uid>{UUID})/crowd/(?P<action>{CROWD_ACTIONS})/$",
        publish.crowd_action,
        name="crowd-action",
    ),
    path("studies/<uuid:uid>/quality/", admin_quality.dashboard, name="quality-dashboard"),
    path("studies/<uuid:uid>/quality/policy/", admin_quality.policy_update, name="quality-policy"),
    path("studies/<uuid:uid>/quality/regrade/", admin_quality.regrade, name="quality-regrade"),
    re_path(
        rf"^studies/(?P<uid>{UUID})/quality/workers/(?P<worker_id>\d+)/(?P<action>block|unblock|exclude|include|bonus)/$",
        admin_quality.worker_action,
        name="quality-worker",
    ),
    re_path(
        rf"^studies/(?P<uid>{UUID})/quality/golds/(?P<item_id>\d+)/(?P<action>keep|retire|fix)/$",
        admin_quality.gold_action,
        name="quality-gold",
    ),
    re_path(
        rf"^studies/(?P<uid>{UUID})/quality/submissions/(?P<pk>\d+)/(?P<decision>approve|reject)/$",
        admin_quality.submission_review,
        name="quality-submission",
    ),
    re_path(
        rf"^studies/(?P<uid>{UUID})/quality/aggregated\.(?P<fmt>csv|jsonl)$",
        admin_quality.aggregate_export,
        name="quality-aggregate",
    ),
    # site settings
    path("settings/lexicon/", lexicon.lexicon_settings, name="lexicon-settings"),
    # model runs
    path("models/", machine.model_run_list, name="model-run-list"),
    path("models/new/", machine.model_run_create, name="model-run-create"),
    path("models/<int:pk>/", machine.model_run_detail, name="model-run-detail"),
    path("models/<int:pk>/train/", machine.model_run_train, name="model-run-train"),
    path("models/<int:pk>/explain/", machine.model_run_explain, name="model-run-explain"),
    path("models/<int:pk>/documents/<int:document_pk>/", machine.model_run_heatmap, name="model-run-heatmap"),
    # task kinds: each kind folder's own pages and API routes (annotate/kinds/<kind>/urls.py)
    path("", include(task_urlpatterns())),
]
