"""A study's whole life, with the browser only, as a researcher who never reads the code: import three
texts, create a highlight study, mark a gold in the worker's own widget, choose by-hand review, fill the
MTurk settings, preview, publish to the sandbox (botocore's Stubber on the app's client checks every
request against MTurk's API model), then three workers accept the HIT and answer every item on the task
page, which hands their work back to MTurk by itself (a local stand-in for ``externalSubmit``). "Reconcile
now" fetches the three assignments MTurk lists, so their answers are verified; the researcher approves
them in bulk and downloads the per-response export, which must hold every answer: each worker's label,
0/1 map and highlighted words for each text. The Prolific twin runs the same life against the local fake of
Prolific's API. Screenshots go to tests/browser/output/<test>/."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest
from botocore.stub import ANY
from django.utils import timezone
from playwright.sync_api import Page

from annotate.access import RESEARCHER_GROUP
from annotate.crowd.jobs import run_reconcile
from annotate.crowd.providers import get_provider
from annotate.crowd.providers.mturk.settings import MTurkConfig
from annotate.crowd.providers.prolific.client import ProlificClient
from annotate.models import PlatformSubmission, Publication, Response, Study
from tests.annotate.conftest import make_user
from tests.annotate.fake_prolific import FakeProlific
from tests.browser.test_crowd_publish import confirm, fill_settings, flash, stub  # noqa: F401 (fixture)
from tests.browser.test_dashboards import signed_in
from tests.browser.test_mturk_flow import external_submit  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXTS = {
    "r1": ("The soup was wonderful", "positive"),
    "r2": ("Cold coffee and rude staff", "negative"),
    "r3": ("A fine quiet evening", "positive"),
}
CSV_FILE = "id,text,label\n" + "".join(f"{key},{text},{label}\n" for key, (text, label) in TEXTS.items())
WORKERS = ("WLIFE0", "WLIFE1", "WLIFE2")
LISTING = {"HITId": "HITLIFE", "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100}


def worker_choice(worker: int, words: list[str]) -> tuple[str, int]:
    """What worker ``worker`` answers on a text: the label by the text's first word, and a word of its own
    (a different one for each worker, so the export shows whose answer is whose)."""
    label = "negative" if words[0] == "Cold" else "positive"
    return label, worker % len(words)


def work_through(context, base: str, study: Study, query: dict[str, str], worker: int, shots: Path,
                 finished: Callable[[Page], None]) -> dict[str, int]:  # fmt: skip
    """One worker enters with the platform's ``query`` and answers every item handed out; ``finished``
    waits for the hand-back to the platform. Returns {document id: word index}."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/w/{study.uid}/?{urlencode(query)}")
    chosen: dict[str, int] = {}
    for number in range(1, len(TEXTS) + 1):
        page.wait_for_selector(
            f"#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your item {number} of 3')"
        )
        words = page.locator(".hl-word").all_inner_texts()
        text = " ".join(words)
        [key] = [k for k, (t, _) in TEXTS.items() if t == text]
        label, index = worker_choice(worker, words)
        page.get_by_role("button", name=label).click()
        page.locator(".hl-word").nth(index).click()
        if worker == 0 and number == 1:
            page.screenshot(path=str(shots / "5-worker-answers.png"), full_page=True)
        page.locator(".ht-submit").click()
        chosen[key] = index
    finished(page)
    page.close()
    assert errors == []
    return chosen


def create_with_a_gold(page: Page, base: str, provider: str, output_dir: Path) -> tuple[Study, str]:
    """Import the three texts, create a highlight study for ``provider`` (three workers per text), mark one
    text gold in the worker's own widget and choose by-hand review of platform work; returns the study and
    the gold text's id."""
    # ---- import three texts -------------------------------------------------------------------------
    page.goto(f"{base}/datasets/")
    page.fill("input[name=name]", "tiny reviews")
    page.set_input_files("input[name=file]", {"name": "reviews.csv", "mimeType": "text/csv",
                                               "buffer": CSV_FILE.encode()})  # fmt: skip
    page.get_by_role("button", name="Import").click()
    page.wait_for_selector(".messages")
    assert "Imported 3 documents" in flash(page)
    page.screenshot(path=str(output_dir / "1-imported.png"), full_page=True)

    # ---- create a highlight study for the platform ---------------------------------------------------
    page.goto(f"{base}/studies/")
    page.locator("a[data-kind='highlight']").click()
    page.fill("input[name=name]", "Sentiment words")
    page.select_option("select[name=dataset]", label="tiny reviews")
    page.fill("input[name=annotators_per_item]", "3")
    page.select_option("select[name=provider]", provider)
    page.locator("button[type=submit]", has_text="Create study").click()
    page.wait_for_selector("h1 .badge.draft")
    study = Study.objects.get(name="Sentiment words")
    assert study.provider == provider and study.dataset.documents.count() == 3

    # ---- a gold, answered in the worker's widget ----------------------------------------------------
    page.get_by_role("link", name="Golds").click()
    page.get_by_role("button", name="Prepare items").click()
    page.locator("#item-1").get_by_role("link", name="Mark as gold").click()
    page.wait_for_selector("#hatlab-app[data-state='item']")
    gold_words = page.locator(".hl-word").all_inner_texts()
    [gold_key] = [k for k, (t, _) in TEXTS.items() if t == " ".join(gold_words)]
    label, index = worker_choice(0, gold_words)
    page.get_by_role("button", name=label).click()
    page.locator(".hl-word").nth(index).click()
    page.get_by_role("button", name="Save as the gold answer").click()
    page.wait_for_selector("#hatlab-app[data-state='done']")
    page.get_by_role("link", name="Back to the golds").click()
    page.screenshot(path=str(output_dir / "2-golds.png"), full_page=True)
    assert f"label “{label}”" in page.locator("#item-1 .gold-answer").inner_text()

    # ---- the researcher reviews platform work by hand -------------------------------------------------
    page.goto(f"{base}/studies/{study.uid}/quality/")
    page.select_option("#policy-form select[name=review]", "manual")
    page.locator("#policy-form button[type=submit]").click()
    page.wait_for_selector(".messages")
    return study, gold_key


def reconcile_here(study: Study) -> bool:
    """ "Reconcile now" as it runs when the broker is away: in this process; nothing was queued."""
    run_reconcile(study)
    return False


def check_export(page: Page, base: str, study: Study, chosen: dict[str, dict[str, int]], gold_key: str,
                 output_dir: Path) -> None:  # fmt: skip
    """The study page's per-response CSV holds every answer of every worker in ``chosen`` ({platform worker
    id: {document id: word index}}): label, 0/1 map, highlighted words and gold flag, under pseudonyms."""
    # ---- the per-response export holds every answer -------------------------------------------------
    page.goto(f"{base}/studies/{study.uid}/")
    with page.expect_download() as download:
        page.locator("#export-responses a", has_text="CSV").first.click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    page.screenshot(path=str(output_dir / "7-study-page.png"), full_page=True)
    pseudonyms = {
        r.worker.external_id: r.worker.pseudonym_for(study.owner_id)
        for r in Response.objects.filter(study=study)
    }
    exported = {(row["worker"], row["document"]): row for row in rows}
    assert len(rows) == 9 and len(exported) == 9  # the verified answers: all of them, each once
    for worker, answers in chosen.items():
        assert set(answers) == set(TEXTS)
        for key, index in answers.items():
            row = exported[(pseudonyms[worker], key)]
            words = TEXTS[key][0].split()
            assert json.loads(row["words"]) == words
            assert row["label"] == worker_choice(0, words)[0]
            assert row["map"] == " ".join(str(int(i == index)) for i in range(len(words)))  # 0/1 per word
            assert json.loads(row["highlighted"]) == [words[index]]
            assert row["gold"] == str(key == gold_key)
    exported_text = Path(download.value.path()).read_text()
    assert not [w for w in chosen if w in exported_text]  # no platform id leaves the app


def test_a_study_from_import_to_export(live_server, browser_context, stub, external_submit, monkeypatch,  # noqa: F811
                                       output_dir):  # fmt: skip
    # a worker finishing queues a reconciliation for later, and "Reconcile now" queues one at once: here
    # both run in this process (the broker is not part of the test)
    monkeypatch.setattr("annotate.crowd.completion.reconcile_soon", lambda study, *a, **k: False)
    monkeypatch.setattr("annotate.crowd.publishing.enqueue_reconcile", reconcile_here)
    owner = make_user("rhea", RESEARCHER_GROUP)
    page, errors = signed_in(browser_context, live_server, owner)

    study, gold_key = create_with_a_gold(page, live_server.url, "mturk", output_dir)
    # ---- MTurk settings, cost and preview -----------------------------------------------------------
    page.goto(f"{live_server.url}/studies/{study.uid}/crowd/")
    fill_settings(page, {"title": "Mark sentiment words", "description": "Read three short reviews.",
                         "reward": "0.30", "hits": "1", "assignments_per_hit": "3"},
                  untick=("trust_qualification",))  # fmt: skip
    assert "Settings saved" in flash(page)
    assert "1.08 USD" in page.locator("#estimate").inner_text()  # 3 × 0.30 + 20 % commission
    page.click("#preview-link")
    page.wait_for_selector("#hatlab-app[data-state='preview'] .hl-word")
    page.screenshot(path=str(output_dir / "3-preview.png"), full_page=True)
    page.go_back()

    # ---- publish to the sandbox ---------------------------------------------------------------------
    parsed = MTurkConfig.from_dict(Study.objects.get(pk=study.pk).provider_config)
    stub.add_response("create_hit_type", {"HITTypeId": "HTLIFE"}, {
        "AutoApprovalDelayInSeconds": 259200, "AssignmentDurationInSeconds": 3600, "Reward": "0.30",
        "Title": parsed.title, "Description": parsed.description,
        "QualificationRequirements": parsed.requirements(None, 0.7)})  # fmt: skip
    stub.add_response("create_hit_with_hit_type", {"HIT": {"HITId": "HITLIFE", "HITTypeId": "HTLIFE",
                      "HITGroupId": "GLIFE", "Expiration": timezone.now() + timedelta(days=7)}},
                      {"HITTypeId": "HTLIFE", "MaxAssignments": 3, "LifetimeInSeconds": 604800, "Question": ANY,
                       "RequesterAnnotation": ANY, "UniqueRequestToken": ANY})  # fmt: skip
    page.locator("#publish-form button").click()
    assert "MTurk sandbox" in confirm(page)
    assert "publish: done" in flash(page)
    assert "HITLIFE" in page.locator("#publications").inner_text()
    page.screenshot(path=str(output_dir / "4-published.png"), full_page=True)

    # ---- three workers answer every text ------------------------------------------------------------
    chosen = {}
    for worker in range(3):
        context = browser_context.browser.new_context(viewport={"width": 1100, "height": 900})
        query = {"assignmentId": f"ALIFE{worker}", "hitId": "HITLIFE", "workerId": WORKERS[worker],
                 "turkSubmitTo": external_submit.url}  # fmt: skip
        chosen[WORKERS[worker]] = work_through(context, live_server.url, study, query, worker, output_dir,
                                               lambda p: p.wait_for_selector("#mturk-received"))  # fmt: skip
        context.close()
    assert len(external_submit.posts) == 3
    assert Response.objects.filter(study=study).count() == 9
    assert not Response.objects.filter(study=study).counted().exists()  # provisional until MTurk lists them

    # ---- reconcile: MTurk lists the three assignments -------------------------------------------------
    listing = {"NumResults": 3, "Assignments": [
        {"AssignmentId": f"ALIFE{i}", "WorkerId": w, "HITId": "HITLIFE", "AssignmentStatus": "Submitted"}
        for i, w in enumerate(WORKERS)]}  # fmt: skip
    stub.add_response("list_assignments_for_hit", listing, LISTING)
    page.reload()
    page.get_by_role("button", name="Reconcile now").click()
    page.wait_for_selector(".messages")
    assert Response.objects.filter(study=study).counted().count() == 9

    # ---- approve the three in bulk ------------------------------------------------------------------
    subs = list(PlatformSubmission.objects.filter(study=study).order_by("external_id"))
    assert [s.external_id for s in subs] == ["ALIFE0", "ALIFE1", "ALIFE2"]
    page.fill("#review-feedback", "Thank you")
    for s in subs:
        stub.add_response(
            "approve_assignment", {}, {"AssignmentId": s.external_id, "RequesterFeedback": "Thank you"}
        )
    page.get_by_role("button", name="Approve chosen…").click()
    assert "Approve 3 submitted" in confirm(page)
    cells = [c.inner_text() for c in page.locator("#publications tbody tr td").all()]
    assert cells[6] == "3"  # approved
    page.screenshot(path=str(output_dir / "6-approved.png"), full_page=True)

    check_export(page, live_server.url, study, chosen, gold_key, output_dir)
    assert errors == []


PARTICIPANTS = ("5f0a0000000000000000aa01", "5f0a0000000000000000aa02", "5f0a0000000000000000aa03")


def test_a_prolific_study_from_import_to_export(
    live_server, browser_context, settings, monkeypatch, output_dir
):
    """The same life on Prolific, against the local fake of its API: each participant arrives with
    ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``, is sent back to Prolific's completion URL with the
    study's code, Prolific then lists the submission as awaiting review, and the researcher approves the
    three in bulk and downloads the export."""
    monkeypatch.setattr("annotate.crowd.completion.reconcile_soon", lambda study, *a, **k: False)
    monkeypatch.setattr("annotate.crowd.publishing.enqueue_reconcile", reconcile_here)
    settings.HATLAB_PUBLIC_URL = "https://hatlab.example.org"
    fake = FakeProlific().start()
    provider = get_provider("prolific")
    provider.use_client(ProlificClient(fake.token, fake.url))
    try:
        owner = make_user("rhea", RESEARCHER_GROUP)
        page, errors = signed_in(browser_context, live_server, owner)
        study, gold_key = create_with_a_gold(page, live_server.url, "prolific", output_dir)

        # ---- Prolific settings, cost and preview ----------------------------------------------------
        page.goto(f"{live_server.url}/studies/{study.uid}/crowd/")
        fill_settings(page, {"name": "Mark sentiment words", "description": "Read three short reviews.",
                             "reward": "1.20", "places": "3", "estimated_minutes": "8"})  # fmt: skip
        assert "Settings saved" in flash(page)
        assert "4.80 GBP" in page.locator("#estimate").inner_text()  # 3 × 1.20 + 33.33 % service fee
        page.click("#preview-link")
        page.wait_for_selector("#hatlab-app[data-state='preview'] .hl-word")
        page.screenshot(path=str(output_dir / "3-preview.png"), full_page=True)
        page.go_back()

        # ---- publish (Prolific has no sandbox: the live box must be ticked) ---------------------------
        page.locator("#publish-form button").click()
        assert "real participants are paid real money" in confirm(page, live=True)
        assert "publish: done" in flash(page)
        [prolific_id] = fake.studies
        assert fake.studies[prolific_id]["status"] == "ACTIVE"
        assert fake.studies[prolific_id]["total_available_places"] == 3
        assert prolific_id in page.locator("#publications").inner_text()
        page.screenshot(path=str(output_dir / "4-published.png"), full_page=True)

        # ---- three participants answer every text and return to Prolific -------------------------------
        chosen, sessions, returned = {}, {}, []
        for worker, pid in enumerate(PARTICIPANTS):
            sessions[pid] = fake.add_submission(prolific_id, pid, status="ACTIVE")
            context = browser_context.browser.new_context(viewport={"width": 1100, "height": 900})
            context.route("https://app.prolific.com/**", lambda route: (returned.append(route.request.url),
                          route.fulfill(status=200, body="Prolific")))  # fmt: skip
            query = {"PROLIFIC_PID": pid, "STUDY_ID": prolific_id, "SESSION_ID": sessions[pid]}
            chosen[pid] = work_through(context, live_server.url, study, query, worker, output_dir,
                                       lambda p: p.wait_for_url("https://app.prolific.com/**"))  # fmt: skip
            context.close()
        code = Publication.objects.get(study=study).details["completion_code"]
        assert returned == [f"https://app.prolific.com/submissions/complete?cc={code}"] * 3
        assert Response.objects.filter(study=study).count() == 9
        # Prolific records each return: the submission awaits review with the study's code
        for sid in sessions.values():
            fake.submissions[sid].update(status="AWAITING REVIEW", study_code=code,
                                         completed_at="2026-08-01T10:20:00Z")  # fmt: skip

        # ---- reconcile: Prolific lists the three submissions ------------------------------------------
        page.reload()
        page.get_by_role("button", name="Reconcile now").click()
        page.wait_for_selector(".messages")
        assert Response.objects.filter(study=study).counted().count() == 9
        subs = list(PlatformSubmission.objects.filter(study=study).order_by("worker_external_id"))
        assert [s.external_id for s in subs] == [sessions[pid] for pid in PARTICIPANTS]
        assert {s.platform_status for s in subs} == {"submitted"}

        # ---- approve the three in bulk --------------------------------------------------------------
        page.get_by_role("button", name="Approve chosen…").click()
        assert "Approve 3 submitted" in confirm(page)
        assert [fake.submissions[sessions[pid]]["status"] for pid in PARTICIPANTS] == ["APPROVED"] * 3
        page.screenshot(path=str(output_dir / "6-approved.png"), full_page=True)

        check_export(page, live_server.url, study, chosen, gold_key, output_dir)
        assert errors == []
    finally:
        provider.use_client(None)
        fake.stop()
