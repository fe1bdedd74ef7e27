"""Blocks are the blocking researcher's: a worker blocked in one researcher's study keeps working in every
other researcher's studies, another researcher cannot lift the block, and every block and unblock is logged
with who made it. The attack: researcher B tries to unblock the worker A blocked, through their own study and
through A's."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as live_apps

from annotate.crowd import blocks
from annotate.handout.assignment import WorkerBlocked, next_assignment
from annotate.models import ChangeLog, QualityPolicy, Study, Worker, WorkerBlock, WorkerTrust
from annotate.quality.exclusion import is_blocked, owner_of
from tests.annotate.conftest import make_worker
from tests.annotate.crowd_helpers import answer, crowd_study, golds, ordinary

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_labs(researcher, other_researcher):
    """Researcher A (``researcher``) with two studies, B (``other_researcher``) with one; one worker answered
    in A's first study and in B's."""
    a1 = crowd_study(researcher, n=6, annotators_per_item=3)
    a2 = crowd_study(researcher, n=6, annotators_per_item=3)
    b1 = crowd_study(other_researcher, n=6, annotators_per_item=3)
    worker = make_worker("shared")
    answer(a1, worker, ordinary(a1)[0])
    answer(b1, worker, ordinary(b1)[0])
    return a1, a2, b1, worker


def action(client, study, worker, what: str):
    return client.post(f"/studies/{study.uid}/quality/workers/{worker.pk}/{what}/")


def test_a_block_holds_in_the_blockers_studies_only(two_labs, researcher, client):
    a1, a2, b1, worker = two_labs
    client.force_login(researcher)
    assert action(client, a1, worker, "block").status_code == 302
    assert is_blocked(a1, worker.pk) and is_blocked(a2, worker.pk)
    assert not is_blocked(b1, worker.pk)
    with pytest.raises(WorkerBlocked):
        next_assignment(a2, worker)
    assert next_assignment(b1, worker) is not None  # B's study still hands the worker items
    assert Worker.objects.get(pk=worker.pk).status == Worker.Status.ACTIVE  # no site-wide block


def test_a_block_holds_for_a_slim_copy_of_the_study_too(two_labs, researcher, client):
    """The submission path reads a slim copy of the study (no owner loaded): the owner is read from the
    database for it, so the block holds there as on the full row, and only in the blocker's studies."""
    a1, a2, b1, worker = two_labs
    client.force_login(researcher)
    assert action(client, a1, worker, "block").status_code == 302
    slim_a2, slim_b1 = (Study.objects.only("id").get(pk=s.pk) for s in (a2, b1))
    slim_a2.owner_id = slim_b1.owner_id = None
    assert owner_of(slim_a2) == researcher.pk and owner_of(a2) == researcher.pk
    assert is_blocked(slim_a2, worker.pk)
    assert not is_blocked(slim_b1, worker.pk)


def test_a_researchers_unblock_lifts_the_block_in_all_their_studies(two_labs, researcher, client):
    """A person's unblock is their choice: it lifts the owner's block even where another of their studies
    had blocked the worker too (a re-grade would leave that one standing)."""
    a1, a2, b1, worker = two_labs
    client.force_login(researcher)
    assert action(client, a1, worker, "block").status_code == 302
    WorkerTrust.objects.update_or_create(study=a2, worker=worker, defaults={"blocked": True})
    assert action(client, a1, worker, "unblock").status_code == 302
    assert not is_blocked(a1, worker.pk) and not is_blocked(a2, worker.pk)
    assert not WorkerTrust.objects.filter(worker=worker, blocked=True).exists()
    assert next_assignment(a2, worker) is not None


def test_another_researcher_cannot_lift_the_block(two_labs, researcher, other_researcher, client):
    a1, a2, b1, worker = two_labs
    client.force_login(researcher)
    action(client, a1, worker, "block")
    client.force_login(other_researcher)
    assert action(client, a1, worker, "unblock").status_code == 404  # A's study: not B's to act on
    assert action(client, b1, worker, "unblock").status_code == 302  # B's own study: lifts B's block only
    assert is_blocked(a1, worker.pk) and is_blocked(a2, worker.pk)
    assert list(WorkerBlock.objects.values_list("owner_id", flat=True)) == [researcher.pk]
    # B's unblock lifted nothing, so it logged nothing
    assert not ChangeLog.objects.filter(action="unblock").exists()


def test_blocks_and_unblocks_are_logged_with_who_made_them(two_labs, researcher, admin_user, client):
    a1, _, _, worker = two_labs
    client.force_login(researcher)
    action(client, a1, worker, "block")
    client.force_login(admin_user)
    action(client, a1, worker, "unblock")
    assert not is_blocked(a1, worker.pk)
    log = list(ChangeLog.objects.order_by("id").values_list("action", "actor_id", "owner_id", "target"))
    assert log == [
        ("block", researcher.pk, researcher.pk, worker.anonymous_id),
        ("unblock", admin_user.pk, researcher.pk, worker.anonymous_id),
    ]


def test_the_quality_policy_blocks_in_the_owners_studies_and_logs_itself(two_labs):
    a1, a2, b1, _ = two_labs
    QualityPolicy.objects.create(study=a1, block_mode="platform", min_golds=3)
    bad = make_worker("bad")
    for gold in golds(a1)[:3]:
        answer(a1, bad, gold, correct=False)
    assert blocks.apply_quality(a1, mirror=False).blocked == [bad.pk]
    assert is_blocked(a2, bad.pk) and not is_blocked(b1, bad.pk)
    entry = ChangeLog.objects.get(action="block")
    assert entry.actor_id is None and entry.owner_id == a1.owner_id


def test_the_migration_turns_a_site_wide_block_into_the_blocking_owners(two_labs, researcher):
    """Rows blocked before blocks were scoped: the worker is blocked by the owner of the study that blocked
    them, no longer everywhere."""
    a1, a2, b1, worker = two_labs
    Worker.objects.filter(pk=worker.pk).update(status=Worker.Status.BLOCKED)
    WorkerTrust.objects.create(study=a1, worker=worker, blocked=True)
    loner = make_worker("loner")
    Worker.objects.filter(pk=loner.pk).update(status=Worker.Status.BLOCKED)  # an admin's, with no study
    migration = importlib.import_module("annotate.migrations.0013_scoped_blocks_change_log")
    migration.scope_blocks(live_apps, None)
    assert Worker.objects.get(pk=worker.pk).status == Worker.Status.ACTIVE
    assert list(WorkerBlock.objects.values_list("owner_id", "worker_id")) == [(researcher.pk, worker.pk)]
    assert is_blocked(a2, worker.pk) and not is_blocked(b1, worker.pk)
    assert Worker.objects.get(pk=loner.pk).status == Worker.Status.BLOCKED
