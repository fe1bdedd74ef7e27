"""URL map: Django admin, and the annotate app's pages and API (one URLconf: :mod:`annotate.urls`)."""

from django.contrib import admin
from django.urls import include, path

from annotate.views.accounts import admin_login

handler404 = "annotate.api.errors.not_found"  # JSON under /api/, the usual page elsewhere
handler500 = (
    "annotate.infra.outages.server_error"  # a database or queue outage answers 503 (annotate.infra.outages)
)

urlpatterns = [
    path("admin/login/", admin_login, name="admin-login"),  # the admin sign-in, behind the sign-in throttle
    path("admin/", admin.site.urls),
    path("", include("annotate.urls")),
]
