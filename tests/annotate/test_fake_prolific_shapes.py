"""The fake Prolific server (``fake_prolific.py``) against Prolific's API reference: every request the
providers' client sends through it, and every answer it gives, checked field by field (name and type)
against the documented shapes below. Each schema names the reference page it was read from.

A schema maps a field to a type, a tuple of types, a set of allowed values, a nested schema, or a
one-element list (a list of that). Fields wrapped in :class:`Maybe` may be null. Every field listed
must be present; fields not listed are not checked (Prolific's objects carry many more).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
import requests

from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base.retry import Backoff
from annotate.crowd.providers.prolific import client as prolific_client
from tests.annotate.crowd_helpers import PROLIFIC_CONFIG, crowd_study
from tests.annotate.fake_prolific import FakeProlific

pytestmark = pytest.mark.django_db

REF = "https://docs.prolific.com/api-reference/"


@dataclass(frozen=True)
class Maybe:
    schema: Any


NUMBER = (int, float)
SUBMISSION_STATUS = {"RESERVED", "ACTIVE", "TIMED-OUT", "AWAITING REVIEW", "APPROVED", "RETURNED", "REJECTED",
                     "SCREENED OUT", "PARTIALLY APPROVED"}  # fmt: skip
CODE_TYPES = {"COMPLETED", "FAILED_ATTENTION_CHECK", "FOLLOW_UP_STUDY", "GIVE_BONUS", "INCOMPATIBLE_DEVICE",
              "NO_CONSENT", "OTHER", "FIXED_SCREENOUT"}  # fmt: skip

# --- requests ------------------------------------------------------------------------------------------
REQUESTS: list[tuple[str, str, dict | None, str]] = [
    # studies/create-study (CreateStudy; BaseStudyProlificIdOption, BaseStudyCompletionCodesItemsCodeType)
    (
        "POST",
        r"studies/",
        {
            "name": str,
            "internal_name": str,
            "description": str,
            "external_study_url": str,
            "prolific_id_option": {"question", "url_parameters", "not_required"},
            "completion_codes": [{"code": str, "code_type": CODE_TYPES, "actions": [{"action": str}]}],
            "total_available_places": int,
            "estimated_completion_time": int,
            "reward": int,
            "device_compatibility": [str],
            "filters": [{"filter_id": str, "selected_values": [str]}],
        },
        REF + "studies/create-study",
    ),  # fmt: skip
    # studies/update-study
    ("PATCH", r"studies/\w+/", {"total_available_places": int}, REF + "studies/update-study"),
    # studies/transition-study: {"action": PUBLISH | PAUSE | START | STOP}
    (
        "POST",
        r"studies/\w+/transition/",
        {"action": {"PUBLISH", "PAUSE", "START", "STOP"}},
        REF + "studies/transition-study",
    ),  # fmt: skip
    # submissions/transition-submission: action, message (≥ 100 characters) and category for REJECT
    (
        "POST",
        r"submissions/\w+/transition/",
        {"action": {"APPROVE", "REJECT", "COMPLETE"}},
        REF + "submissions/transition-submission",
    ),  # fmt: skip
    # bonuses/create-bonus-payments: study_id and "<participant_id>,<amount>\n" lines
    (
        "POST",
        r"submissions/bonus-payments/",
        {"study_id": str, "csv_bonuses": str},
        REF + "bonuses/create-bonus-payments",
    ),  # fmt: skip
    # bonuses/pay-bonus-payments: no body
    ("POST", r"bulk-bonus-payments/\w+/pay/", None, REF + "bonuses/pay-bonus-payments"),
    # participant-groups/create-participant-group
    (
        "POST",
        r"participant-groups/",
        {"name": str, "workspace_id": str},
        REF + "participant-groups/create-participant-group",
    ),  # fmt: skip
    # participant-groups/add-to-participant-group and remove-from-participant-group
    (
        "POST",
        r"participant-groups/\w+/participants/",
        {"participant_ids": [str]},
        REF + "participant-groups/add-to-participant-group",
    ),  # fmt: skip
    (
        "DELETE",
        r"participant-groups/\w+/participants/",
        {"participant_ids": [str]},
        REF + "participant-groups/remove-from-participant-group",
    ),  # fmt: skip
    # messages/send-message: recipient_id, body, study_id (all required)
    (
        "POST",
        r"messages/",
        {"recipient_id": str, "body": str, "study_id": str},
        REF + "messages/send-message",
    ),
    # GETs carry no body: workspaces/get-workspaces, workspaces/get-workspace-balance, studies/get-studies,
    # studies/get-study, studies/get-study-submissions, submissions/get-submission,
    # participant-groups/get-participant-groups
    ("GET", r"[\w/-]+", None, REF),
]

# --- answers -------------------------------------------------------------------------------------------
SUBMISSION_SHORT = {  # studies/get-study-submissions: SubmissionShort
    "id": str, "participant_id": str, "status": SUBMISSION_STATUS, "started_at": str,
    "completed_at": Maybe(str), "study_code": Maybe(str),
}  # fmt: skip
SUBMISSION = {  # submissions/get-submission (and the answer of transition-submission)
    "id": str, "started_at": str, "status": SUBMISSION_STATUS, "study_id": str,
    "completed_at": Maybe(str), "entered_code": Maybe(str), "participant": Maybe(str),
}  # fmt: skip
BALANCE = {  # workspaces/get-workspace-balance (sub-currency units)
    "currency_code": str, "total_balance": int, "balance_breakdown": dict,
    "available_balance": int, "available_balance_breakdown": dict,
}  # fmt: skip
BONUS = {"id": str, "study": str, "amount": NUMBER, "fees": NUMBER, "total_amount": NUMBER, "vat": NUMBER}
GROUP_MEMBERS = {"results": [{"participant_id": str, "datetime_created": str}]}
GROUP = {"id": str, "name": str, "workspace_id": Maybe(str)}  # participant-groups/get-participant-group


def problems(value: Any, schema: Any, where: str = "") -> list[str]:
    """Where ``value`` departs from ``schema`` (empty when it conforms)."""
    if isinstance(schema, Maybe):
        return [] if value is None else problems(value, schema.schema, where)
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return [f"{where or 'body'}: want an object, got {value!r}"]
        out = []
        for name, sub in schema.items():
            if name not in value:
                out.append(f"{where}.{name}: missing")
            else:
                out.extend(problems(value[name], sub, f"{where}.{name}"))
        return out
    if isinstance(schema, list):
        if not isinstance(value, list):
            return [f"{where}: want a list, got {value!r}"]
        return [p for i, v in enumerate(value) for p in problems(v, schema[0], f"{where}[{i}]")]
    if isinstance(schema, set):
        return [] if value in schema else [f"{where}: {value!r} is not one of {sorted(schema)}"]
    if schema in (int, NUMBER) and isinstance(value, bool):
        return [f"{where}: want a number, got {value!r}"]
    return [] if isinstance(value, schema) else [f"{where}: want {schema}, got {value!r}"]


@pytest.fixture
def fake():
    server = FakeProlific().start()
    yield server
    server.stop()


@pytest.fixture
def client(fake):
    return prolific_client.ProlificClient(fake.token, fake.url, backoff=Backoff(attempts=2, base_s=0.01))


def call(fake, method: str, path: str, body: Any = None) -> requests.Response:
    return requests.request(
        method, fake.url + path, json=body, headers={"Authorization": f"Token {fake.token}"}, timeout=10
    )


def test_the_clients_requests_have_the_documented_shapes(fake, client, researcher, settings):
    settings.HATLAB_PUBLIC_URL = "https://hatlab.example.org"
    provider = get_provider("prolific")
    provider.use_client(client)
    try:
        study = crowd_study(researcher, "prolific", {**PROLIFIC_CONFIG, "only_trusted": True}, n=4)
        [publication] = provider.publish(study, "b1")
    finally:
        provider.use_client(None)
    study_id = publication.external_id
    client.update_study(study_id, {"total_available_places": 12})
    approve, reject = fake.add_submission(study_id, "p" * 24), fake.add_submission(study_id, "q" * 24)
    client.approve(approve)
    client.reject(reject, "The answers did not follow the instructions. " * 3)
    bonus = client.set_up_bonus(study_id, "p" * 24, Decimal("0.50"))
    client.pay_bonus(bonus["id"])
    group = client.group_id("ws0001", "hatlab test group")
    client.add_to_group(group, ["p" * 24])
    client.remove_from_group(group, ["p" * 24])
    client.message("p" * 24, study_id, "Thank you for taking part.")
    client.transition_study(study_id, "PAUSE")

    wrong, unknown = [], []
    for method, path, body in fake.calls:
        rule = next((r for r in REQUESTS if r[0] == method and re.fullmatch(r[1], path)), None)
        if rule is None:
            unknown.append(f"{method} {path}")
            continue
        schema, page = rule[2], rule[3]
        if schema is None:
            if body not in (None, {}, b"", ""):
                wrong.append(f"{method} {path}: documented without a body ({page}), sent {body!r}")
        else:
            wrong.extend(f"{method} {path}{p} ({page})" for p in problems(body, schema))
    assert not unknown, f"endpoints the client used that no documented shape covers: {unknown}"
    assert not wrong, "\n".join(wrong)
    # the rejection rules of submissions/transition-submission
    [rejection] = [b for m, p, b in fake.calls if p == f"submissions/{reject}/transition/"]
    assert len(rejection["message"]) >= 100 and isinstance(rejection["rejection_category"], str)
    bonus_call = fake.calls_to("POST", "submissions/bonus-payments/")[0]
    assert re.fullmatch(r"(\w+,\d+\.\d{2}\n)+", bonus_call["csv_bonuses"])


def test_the_fakes_answers_have_the_documented_shapes(fake):
    # workspaces/get-workspace-balance
    reply = call(fake, "GET", "workspaces/ws0001/balance/")
    assert reply.status_code == 200 and not problems(reply.json(), BALANCE), problems(reply.json(), BALANCE)
    # studies/get-study-submissions and submissions/get-submission
    fake.studies["s" * 24] = {"id": "s" * 24, "status": "ACTIVE", "total_available_places": 2}
    sid = fake.add_submission("s" * 24, "p" * 24, code="CODE1")
    listed = call(fake, "GET", f"studies/{'s' * 24}/submissions/").json()
    assert not problems(listed, {"results": [SUBMISSION_SHORT]}), problems(
        listed, {"results": [SUBMISSION_SHORT]}
    )
    one = call(fake, "GET", f"submissions/{sid}/").json()
    assert not problems(one, SUBMISSION), problems(one, SUBMISSION)
    # submissions/transition-submission answers with the submission
    moved = call(fake, "POST", f"submissions/{sid}/transition/", {"action": "APPROVE"})
    assert moved.status_code == 200 and not problems(moved.json(), SUBMISSION), problems(
        moved.json(), SUBMISSION
    )
    # bonuses/create-bonus-payments: 201 with the bulk payment; pay-bonus-payments: 202 with a message
    bonus = call(
        fake,
        "POST",
        "submissions/bonus-payments/",
        {"study_id": "s" * 24, "csv_bonuses": f"{'p' * 24},4.25\n"},
    )
    assert bonus.status_code == 201 and not problems(bonus.json(), BONUS), problems(bonus.json(), BONUS)
    paid = call(fake, "POST", f"bulk-bonus-payments/{bonus.json()['id']}/pay/")
    assert paid.status_code == 202 and isinstance(paid.json(), str)
    # participant groups: create, add, remove
    group = call(fake, "POST", "participant-groups/", {"name": "g", "workspace_id": "ws0001"}).json()
    assert not problems(group, GROUP), problems(group, GROUP)
    for method in ("POST", "DELETE"):
        members = call(
            fake, method, f"participant-groups/{group['id']}/participants/", {"participant_ids": ["p" * 24]}
        )
        assert members.status_code == 200
        if method == "POST":
            assert not problems(members.json(), GROUP_MEMBERS), problems(members.json(), GROUP_MEMBERS)


def test_the_shape_check_can_fail():
    assert problems({"id": "x", "participant_id": "p"}, SUBMISSION) == [
        ".started_at: missing", ".status: missing", ".study_id: missing", ".completed_at: missing",
        ".entered_code: missing", ".participant: missing",
    ]  # fmt: skip
    assert problems({"results": [{"participant_id": 3, "datetime_created": "t"}]}, GROUP_MEMBERS) == [
        ".results[0].participant_id: want <class 'str'>, got 3"
    ]
    assert problems({"total_available_places": True}, {"total_available_places": int})
