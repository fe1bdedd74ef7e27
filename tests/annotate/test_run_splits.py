"""A model run's empty or tiny held-out split is said on its page, and a forced-choice study's form
defaults to a split that holds texts for the runs it offers."""

from __future__ import annotations

import pytest

from annotate.access import RESEARCHER_GROUP
from annotate.kinds.forced_choice.forms import ForcedChoiceStudyForm
from annotate.machine.splits import TINY_SPLIT, fitting_split, split_warnings
from annotate.models import ModelRun
from tests.annotate.conftest import make_dataset, make_user

pytestmark = pytest.mark.django_db


def run_with(owner, dataset, test: int | None, validation: int | None, name: str = "run") -> ModelRun:
    metrics = {}
    for split, n in (("test", test), ("validation", validation)):
        if n is not None:
            metrics[split] = {"n": n, "accuracy": None if n == 0 else 0.5, "macro_f1": None}
    return ModelRun.objects.create(name=name, owner=owner, dataset=dataset, architecture="cnn",
                                   status=ModelRun.Status.DONE, metrics=metrics)  # fmt: skip


@pytest.fixture
def owner():
    return make_user("ines", RESEARCHER_GROUP)


def test_warnings_name_the_split_and_its_size(owner):
    dataset = make_dataset(owner, n=4)
    assert split_warnings(run_with(owner, dataset, TINY_SPLIT, TINY_SPLIT)) == []
    [tiny, empty] = split_warnings(run_with(owner, dataset, 0, 1))
    assert empty.startswith("The test split is empty") and "“all”" in empty
    assert tiny.startswith("The validation split has only 1 text:") and "100 points" in tiny
    [below] = split_warnings(run_with(owner, dataset, TINY_SPLIT - 1, None))
    assert f"only {TINY_SPLIT - 1} texts" in below
    assert split_warnings(run_with(owner, dataset, None, None)) == []  # nothing recorded, nothing said


def test_the_run_page_warns_of_an_empty_test_split(client, owner):
    dataset = make_dataset(owner, n=4)
    client.force_login(owner)
    small = client.get(f"/models/{run_with(owner, dataset, 0, 3).pk}/").content.decode()
    assert small.count('class="message warning split-warning"') == 2
    assert "The test split is empty" in small and "The validation split has only 3 texts" in small
    large = client.get(f"/models/{run_with(owner, dataset, 200, 100, name='big').pk}/").content.decode()
    assert "split-warning" not in large


def test_the_forced_choice_form_defaults_to_a_split_with_texts(owner):
    dataset = make_dataset(owner, n=4)
    assert ForcedChoiceStudyForm(user=owner).fields["split"].initial == "test"  # no runs yet
    run_with(owner, dataset, 200, 100, name="big")
    assert ForcedChoiceStudyForm(user=owner).fields["split"].initial == "test"
    run_with(owner, dataset, 0, 30, name="twelve texts")
    form = ForcedChoiceStudyForm(user=owner)
    assert form.fields["split"].initial == "validation"
    assert "0 test texts" in str(form["model_run"])
    run_with(owner, dataset, 5, 2, name="tiny")
    assert ForcedChoiceStudyForm(user=owner).fields["split"].initial == "all"
    assert fitting_split([]) == "test"
