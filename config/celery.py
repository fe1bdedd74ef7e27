"""The Celery app. Jobs live in ``annotate.jobs``; the ``gpu`` queue is consumed by GPU workers."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("hatlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["annotate"], related_name="jobs")
