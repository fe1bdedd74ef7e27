"""The server owns every risk signal: attacks on the risk score through the annotator API.

A script answers every item with neither a page token nor any input, and claims ``signals.recovered``
(which once switched the no-page and no-interaction checks off); another copies one item's page token
and sends it with every answer, with plausible input counts. Both wait between taking an item and
answering it as a reader would (the assignment's hand-out time is set back: the sleep), so the speed
check does not see them; the page and interaction checks must.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from annotate.models import Assignment, Worker
from annotate.quality import risk
from tests.annotate.crowd_helpers import crowd_study
from tests.annotate.test_api import Annotator, body_for

pytestmark = pytest.mark.django_db

NO_INPUT = {"pointer": 0, "keys": 0, "touches": 0, "moves": 0}
SOME_INPUT = {"pointer": 3, "keys": 1, "touches": 0, "moves": 60}


def answer_all(study, annotator: Annotator, signals_for) -> None:
    """Take and answer every item, each after a reader's wait, with varied labels (no answer pattern to
    see) and ``signals_for(next answer)``."""
    labels = ("positive", "negative", "cannot decide")
    n = 0
    while "assignment" in (data := annotator.next().json()):
        n += 1
        Assignment.objects.filter(uid=data["assignment"]).update(
            assigned_at=Assignment.objects.get(uid=data["assignment"]).assigned_at - timedelta(minutes=5)
        )
        body = {**body_for(data["item"]["payload"], label=labels[n % 3]), "signals": signals_for(data)}
        assert annotator.submit(data["assignment"], body).status_code == 201


def scored(study, name: str) -> risk.WorkerRisk:
    worker = Worker.objects.get(external_id__endswith=name)
    return risk.study_risks(study)[worker.pk]


def test_a_client_claim_of_recovery_switches_no_check_off(researcher):
    study = crowd_study(researcher, n=8, gold_every=0, annotators_per_item=1)
    answer_all(study, Annotator(study, "script"), lambda data: {"recovered": True, "interaction": NO_INPUT})
    found = scored(study, "script")
    print(f"\nno token, no input, 'recovered' claimed: risk {found.score:.3f}")
    assert found.flagged and {"no_page", "no_interaction"} <= {r.code for r in found.reasons}


def test_one_copied_page_token_covers_no_other_item(researcher):
    study = crowd_study(researcher, n=8, gold_every=0, annotators_per_item=1)
    copied: list[str] = []

    def signals_for(data: dict) -> dict:
        copied[:] = copied or [data["page_token"]]  # the token of the first item, kept and sent every time
        return {"page_token": copied[0], "interaction": SOME_INPUT}

    answer_all(study, Annotator(study, "copier"), signals_for)
    found = scored(study, "copier")
    print(f"\none copied page token, input counts sent, a reader's wait: risk {found.score:.3f}")
    no_page = [r for r in found.reasons if r.code == "no_page"]
    assert found.flagged and no_page and no_page[0].evidence.startswith("7 of 8")
