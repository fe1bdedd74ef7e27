"""Routes of the crowd side: the researcher's platform page and API, the admin's quality dashboard.

Include from the project's URLs: ``path("", include("annotate.urls_crowd"))``.
"""

from django.urls import path, re_path

from annotate.views import admin_quality, publish

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
CROWD_ACTIONS = "|".join(publish.ACTIONS)

urlpatterns = [
    path("studies/<uuid:uid>/crowd/", publish.crowd_page, name="crowd-page"),
    re_path(
        rf"^studies/(?P<uid>{UUID})/crowd/(?P<action>{CROWD_ACTIONS})/$",
        publish.crowd_action,
        name="crowd-action",
    ),
    path("studies/<uuid:uid>/quality/", admin_quality.dashboard, name="quality-dashboard"),
    path("studies/<uuid:uid>/quality/policy/", admin_quality.policy_update, name="quality-policy"),
    path("studies/<uuid:uid>/quality/regrade/", admin_quality.regrade, name="quality-regrade"),
    re_path(
        rf"^studies/(?P<uid>{UUID})/quality/workers/(?P<worker_id>\d+)/(?P<action>block|unblock|bonus)/$",
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
    path("api/crowd/studies/<uuid:uid>/", publish.CrowdStudyAPI.as_view(), name="api-crowd-study"),
    re_path(
        rf"^api/crowd/studies/(?P<uid>{UUID})/(?P<action>{CROWD_ACTIONS})/$",
        publish.CrowdActionAPI.as_view(),
        name="api-crowd-action",
    ),
    path(
        "api/crowd/studies/<uuid:uid>/quality/", admin_quality.QualityAPI.as_view(), name="api-crowd-quality"
    ),
]
