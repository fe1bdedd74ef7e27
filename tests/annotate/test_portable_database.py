"""The demo's database (SQLite) and PostgreSQL give the same hand-out: the portable path records the
caller's ``now``, and the per-process item count does not outlive its study when an id comes back
(SQLite gives a deleted study's id to the next one)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotate.handout.assignment import next_assignment, study_item_count
from annotate.models import Assignment, Item, Study
from tests.annotate.conftest import make_study, make_worker

pytestmark = pytest.mark.django_db


def test_the_portable_hand_out_records_the_callers_now(researcher, dataset, monkeypatch):
    monkeypatch.setattr("annotate.infra.sql.native", lambda: False)
    study = make_study(researcher, dataset, name="portable now")
    now = timezone.now() - timedelta(hours=3)
    assignment = next_assignment(study, make_worker("then"), now=now)
    assert assignment.assigned_at == now
    stored = Assignment.objects.get(pk=assignment.pk)
    assert stored.assigned_at == now
    assert stored.expires_at - stored.assigned_at == timedelta(seconds=study.time_limit_s)


def test_the_item_count_belongs_to_the_study_not_to_its_id(researcher, dataset):
    first = make_study(researcher, dataset, name="first")
    total = study_item_count(first)
    assert total == Item.objects.filter(study=first).count() > 1
    pk = first.pk
    Study.objects.filter(pk=pk).delete()  # as a rolled-back test or a removed study leaves it
    second = make_study(researcher, dataset, name="second", pk=pk)  # the id SQLite would hand out again
    Item.objects.filter(study=second).order_by("position").last().delete()
    assert Study.objects.get(pk=pk).name == "second"
    assert study_item_count(second) == total - 1
