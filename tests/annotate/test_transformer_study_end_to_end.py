"""Issue 17 as a researcher lives it, through the pages and the API: import texts, run a highlight study
whose workers mark the words that show the sentiment, train a transformer from the model-run page on a
checkpoint folder, explain it with every method the registry fits to the family with faithfulness
measured, and read the human-vs-machine dashboard: each method's comparison with the human maps, the
faithfulness table, the plausibility-versus-faithfulness chart and its CSV. Jobs run in this process,
as a worker would run them, right after the request that queued them commits.

The stored values are checked against what they must be: the attention maps against attention rollout
worked out here from the ``transformers`` library's own attention probabilities of the trained
checkpoint (a word's relevance the sum over its pieces, the special tokens no word's), the integrated
gradients against completeness over the words, and the dashboard's faithfulness figures against the
means of the stored per-text values of the texts it compares."""

from __future__ import annotations

import csv
import html
import io
import json
import math
import random
import re

import numpy as np
import pytest
import torch

from annotate.access import RESEARCHER_GROUP
from annotate.dashboards import jobs as dashboard_jobs
from annotate.dashboards.similarity import MAX_SELECTIONS
from annotate.infra import storage
from annotate.machine import jobs as machine_jobs
from annotate.models import Item, Job, ModelRun, Study
from annotate.quality import grading
from explain_engine.api import FAITHFULNESS_BINS, methods_for
from tests.annotate.conftest import make_user, make_worker
from tests.annotate.test_dashboards import answer, noisy
from tests.engine.tiny_transformer import build_tiny_checkpoint, transformers

pytestmark = [pytest.mark.django_db]

LAYERS = 2
SENTIMENT = {"delicious", "wonderful", "friendly", "superb", "awful", "rude", "disgusting", "terrible"}
REVIEWS = [
    ("t0", "The pasta was delicious and the waiters were friendly.", "positive"),
    ("t1", "Rude staff, and the soup tasted awful.", "negative"),
    ("t2", "A wonderful evening: superb wine, delicious bread!", "positive"),
    ("t3", "The fish was disgusting and the bill terrible.", "negative"),
    ("t4", "Friendly owners and a wonderful terrace.", "positive"),
    ("t5", "Terrible service; the manager was rude.", "negative"),
    ("t6", "Superb desserts, delicious coffee, friendly prices.", "positive"),
    ("t7", "Awful music and disgusting tables.", "negative"),
    ("t8", "We loved it: wonderful, superb, delicious.", "positive"),
    ("t9", "Terrible noise, rude waiters, awful food.", "negative"),
]
GOLD = ("t0", "t5")  # gold items: the 8 other texts are the ones the dashboard compares
COUNTED = [doc for doc, _, _ in REVIEWS if doc not in GOLD]
INTEGRATED = ("grad_dot_int_p", "grad_dot_int_s", "grad_l2_int_p", "grad_l2_int_s")


def sentiment_map(text: str) -> list[int]:
    """1 for each canonical word (white-space separated, punctuation attached) that shows the sentiment."""
    return [int(w.strip(".,:;!").lower() in SENTIMENT) for w in text.split()]


@pytest.fixture(autouse=True)
def _media_and_threads(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HATLAB_S3_BUCKET = ""
    settings.HATLAB_TORCH_THREADS = 1
    torch.set_num_threads(1)


@pytest.fixture
def eager(monkeypatch, django_capture_on_commit_callbacks):
    """A context in which the jobs a request queues run here when it commits, as a worker would run them."""
    for task in (machine_jobs.train_model, machine_jobs.explain_model, dashboard_jobs.compute_dashboard):
        monkeypatch.setattr(task, "apply_async", lambda args, _task=task, **_: _task.apply(args=args).get())
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def rita(client):
    user = make_user("rita", RESEARCHER_GROUP)
    client.force_login(user)
    return user


def api_list(client, url: str, **query) -> list[dict]:
    """Every row of a paginated API list."""
    rows, page = [], client.get(url, query).json()
    while True:
        rows += page["results"]
        if not page["next"]:
            return rows
        page = client.get(page["next"]).json()


def import_reviews(client) -> int:
    """Step 1a: the dataset page imports a JSONL file; two texts carry a gold answer."""
    lines = [
        json.dumps(
            {"id": doc, "text": text, "label": label}
            | ({"metadata": {"gold": {"label": label, "map": sentiment_map(text)}}} if doc in GOLD else {})
        )
        for doc, text, label in REVIEWS
    ]
    upload = io.BytesIO("\n".join(lines).encode())
    upload.name = "reviews.jsonl"
    imported = client.post("/datasets/", {"name": "restaurant reviews", "file": upload}, follow=True)
    assert imported.status_code == 200 and "Imported 10 documents" in imported.content.decode()
    return imported.context["dataset"].pk


def run_study(client, dataset_pk: int) -> Study:
    """Step 1b: a highlight study created and started from its pages; three workers mark the sentiment
    words of every text (the second and third with one and two words flipped on the compared texts),
    pass both golds, and their trust is refreshed as the quality job does, so their maps count."""
    created = client.post(
        "/studies/new/?kind=highlight",
        {
            "name": "sentiment words",
            "dataset": dataset_pk,
            "mode": "read_first",
            "labels": "positive, negative",
            "annotators_per_item": 3,
            "time_limit_min": 10,
            "provider": "local",
        },
    )
    assert created.status_code == 302, created.context["form"].errors
    study = Study.objects.get(name="sentiment words")
    started = client.post(f"/studies/{study.uid}/start/", follow=True)
    study.refresh_from_db()
    assert study.status == Study.Status.RUNNING, [str(m) for m in started.context["messages"]]
    workers = [make_worker(f"w{i}") for i in range(3)]
    rng = random.Random(5)
    items = list(Item.objects.filter(study=study).select_related("document").order_by("position"))
    assert sorted(i.document.external_id for i in items if i.is_gold) == sorted(GOLD)
    for item in items:
        base = sentiment_map(item.document.text)
        assert len(base) == len(item.payload["words"])
        for slot, worker in enumerate(workers):
            word_map = base if slot == 0 or item.is_gold else noisy(base, rng, flips=slot)
            gold = True if item.is_gold else None
            answer(item, worker, slot, item.document.label, word_map, gold_passed=gold)
    grading.refresh_trust(study)
    return study


def train_transformer(client, eager, dataset_pk: int, checkpoint) -> ModelRun:
    """Step 2: the model-run page offers the transformer family and fine-tunes the checkpoint folder
    (40 short epochs without early stopping: enough for the tiny model to learn the sentiment words)."""
    page = client.get(f"/models/new/?dataset={dataset_pk}").content.decode()
    assert '<option value="transformer">' in page and 'name="checkpoint"' in page
    with eager():
        created = client.post(
            "/models/new/",
            {
                "dataset": dataset_pk,
                "name": "tiny bert",
                "architecture": "transformer",
                "checkpoint": str(checkpoint),
                "epochs": 40,
                "batch_size": 2,
                "lr": 0.003,
                "extra": '{"fractions": [0.6, 0.2, 0.2], "balance": false, "patience": null}',
            },
        )
    assert created.status_code == 302, created.context["form"].errors if created.context else created
    run = ModelRun.objects.get(name="tiny bert")
    assert created["Location"] == f"/models/{run.pk}/"
    shown = client.get(f"/api/model-runs/{run.pk}/").json()
    assert shown["status"] == ModelRun.Status.DONE, shown["message"]
    metrics = shown["metrics"]
    assert metrics["architecture"] == "transformer" and metrics["epochs_run"] == 40
    assert (metrics["n_train"], metrics["n_validation"], metrics["n_test"]) == (6, 2, 2)
    assert metrics["history"][-1]["train_accuracy"] == 1.0  # the tiny model learned its training texts
    predictions = api_list(client, "/api/predictions/", model_run=run.pk)
    assert len(predictions) == len(REVIEWS) and all(p["attention"] is None for p in predictions)
    return run


def explain_everything(client, eager, run: ModelRun) -> list[str]:
    """Step 3: the run page offers every method the registry fits to the transformer family; all of them
    are asked for, with faithfulness measured, for the predicted class."""
    page = client.get(f"/models/{run.pk}/").content.decode()
    offered = sorted(re.findall(r'name="methods" value="([^"]+)"', page))
    assert (
        offered
        == sorted(methods_for("transformer"))
        == sorted(client.get(f"/api/model-runs/{run.pk}/methods/").json())
    )
    # gradient, gradient × input, integrated gradients, LIME, occlusion / omission, LIMSSE, attention maps
    assert {"grad_l2_1s", "grad_dot_1s", *INTEGRATED, "lime", "occ_1", "omit_1", "limsse_bb"} <= set(offered)
    assert {"attention_last", "attention_rollout"} <= set(offered)
    with eager():
        queued = client.post(
            f"/models/{run.pk}/explain/",
            {"methods": offered, "target": "predicted", "m": 3, "unit": "word", "faithfulness": "on"},
        )
    assert queued.status_code == 302
    job = Job.objects.get(kind=machine_jobs.EXPLAIN_KIND)
    shown = client.get(f"/api/jobs/{job.pk}/").json()
    assert shown["status"] == Job.Status.DONE, shown["message"]
    assert shown["result"]["documents"] == len(REVIEWS) and shown["result"]["skipped_documents"] == 0
    assert shown["result"]["explanations"] == len(REVIEWS) * len(offered)
    assert shown["result"]["flagged_explanations"] == 0
    return offered


def attention_by_hand(tokenizer, network, text: str) -> tuple[list[float], list[float], float, int]:
    """Attention rollout and last-layer attention of the classification token over the canonical words
    of ``text``, worked out from the trained network's attention probabilities as the library returns
    them: A = (mean over heads + I) / row sum per layer, multiplied from the first layer up (Abnar &
    Zuidema 2020 §3); a word's value is the sum over the pieces whose first character lies in it.
    Also the rollout's mass on the special tokens and the number of pieces of the most split word."""
    encoded = tokenizer(
        text, return_offsets_mapping=True, return_special_tokens_mask=True, return_tensors="pt"
    )
    with torch.no_grad():
        maps = network(
            input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"], output_attentions=True
        ).attentions
    flow = torch.eye(maps[0].shape[-1], dtype=torch.float64)
    for layer in maps:
        mixed = layer[0].double().mean(dim=0) + torch.eye(layer.shape[-1], dtype=torch.float64)
        flow = (mixed / mixed.sum(dim=-1, keepdim=True)) @ flow
    rolled, last = flow[0], maps[-1][0].double().mean(dim=0)[0]
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    special = encoded["special_tokens_mask"][0].bool()
    owners = [
        -1 if is_special else next(w for w, (s, e) in enumerate(spans) if s <= int(start) < e)
        for (start, _), is_special in zip(
            encoded["offset_mapping"][0].tolist(), special.tolist(), strict=True
        )
    ]
    rollout_words, last_words = [0.0] * len(spans), [0.0] * len(spans)
    for t, owner in enumerate(owners):
        if owner >= 0:
            rollout_words[owner] += float(rolled[t])
            last_words[owner] += float(last[t])
    pieces = max(owners.count(w) for w in range(len(spans)))
    return rollout_words, last_words, float(rolled[special].sum()), pieces


def check_explanations(client, run: ModelRun, methods: list[str]) -> dict[tuple[str, str], dict]:
    """The stored explanations, read from the API: one per text and method, a score per canonical word,
    the attention maps equal to the hand-worked ones, the integrated gradients complete over the words,
    faithfulness measured for the predicted class. Returns them by (document, method)."""
    predicted = {p["document"]: p["label"] for p in api_list(client, "/api/predictions/", model_run=run.pk)}
    external = dict(run.dataset.documents.values_list("pk", "external_id"))
    texts = {doc: text for doc, text, _ in REVIEWS}
    rows = api_list(client, "/api/explanations/", model_run=run.pk)
    by_key = {(external[r["document"]], r["method"]): r for r in rows}
    assert len(rows) == len(by_key) == len(REVIEWS) * len(methods)
    folder = str(storage.local_artifact(run.artifact) / "transformer")  # the trained network, as saved
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    network = transformers.AutoModelForSequenceClassification.from_pretrained(
        folder, attn_implementation="eager"
    ).eval()
    most_pieces = 0
    for (doc, method), row in by_key.items():
        assert len(row["scores"]) == len(texts[doc].split()), (doc, method)
        assert all(math.isfinite(v) for v in row["scores"]), (doc, method)
        assert row["target"] == predicted[row["document"]]
        measured = row["faithfulness"]
        assert measured["bins"] == list(FAITHFULNESS_BINS) and measured["target"] == row["target"]
        assert len(measured["comprehensiveness"]) == len(measured["sufficiency"]) == len(FAITHFULNESS_BINS)
        assert measured["comprehensiveness_aopc"] == pytest.approx(np.mean(measured["comprehensiveness"]))
        assert measured["sufficiency_aopc"] == pytest.approx(np.mean(measured["sufficiency"]))
        assert all(-1 <= v <= 1 for v in measured["comprehensiveness"] + measured["sufficiency"])
        assert -1 <= measured["kendall_tau_loo"] <= 1 and 0.5 <= measured["probability"] <= 1
        if method in INTEGRATED:
            completeness = row["diagnostics"]["completeness"]
            assert completeness["converged"] and completeness["steps"] >= 50
            assert completeness["output"] == method[-1]
            if method.startswith("grad_dot"):  # Σ over the words alone = o(X) − o(baseline)
                assert sum(row["scores"]) == pytest.approx(completeness["total"], rel=1e-4, abs=1e-6)
                assert sum(row["scores"]) == pytest.approx(completeness["difference"], rel=0.01, abs=1e-5)
            else:
                assert min(row["scores"]) >= 0  # an L2 norm per word
    for doc in texts:
        rollout, last, on_special, pieces = attention_by_hand(tokenizer, network, texts[doc])
        most_pieces = max(most_pieces, pieces)
        stored = by_key[doc, "attention_rollout"]["scores"]
        assert stored == pytest.approx(rollout, abs=1e-5)
        assert by_key[doc, "attention_last"]["scores"] == pytest.approx(last, abs=1e-5)
        # [CLS] keeps at least 1/2 of its own row per layer, and [CLS] and [SEP] belong to no word
        assert on_special >= 0.5**LAYERS and sum(stored) == pytest.approx(1 - on_special, abs=1e-5)
        assert min(stored) > 0
    assert most_pieces >= 2  # some word ("delicious." at least) is more than one piece
    # the run's heat map of a text shows the rollout over its words above the people's maps
    shown = by_key["t2", "attention_rollout"]
    page = client.get(f"/models/{run.pk}/documents/{shown['document']}/", {"method": "attention_rollout"})
    machine = re.search(r'data-map="machine">(.*?)</p>', page.content.decode(), re.S).group(1)
    titles = [float(t) for t in re.findall(r'title="([^"]+)"', machine)]
    assert titles == pytest.approx(shown["scores"], abs=5e-5)
    assert (
        page.content.decode().count('class="heat-text"') == 1 + 3 + 2
    )  # the machine's, 3 workers', CAM, SAM
    return by_key


def compare(client, study: Study, run: ModelRun, methods: list[str]) -> list[dict]:
    """Step 4: the human-vs-machine page offers each method of the run; it is opened with a page's worth
    of selections at a time for the predicted class, and the dashboard its script fetches is read, with
    the CSV of its plausibility-versus-faithfulness chart. Returns the dashboards (the API's JSON)."""
    options = client.get(f"/api/dashboards/studies/{study.uid}/machine-options/").json()["runs"]
    offered = {m["method"]: m["documents"] for r in options if r["run"] == run.pk for m in r["methods"]}
    assert offered == dict.fromkeys(methods, len(REVIEWS))  # a transformer has no training attention
    page = client.get(f"/studies/{study.uid}/dashboard/machine/").content.decode()
    assert all(f'value="{run.pk}:{m}"' in page for m in methods)
    dashboards = []
    for first in range(0, len(methods), MAX_SELECTIONS):
        select = [f"{run.pk}:{m}" for m in methods[first : first + MAX_SELECTIONS]]
        shell = client.get(
            f"/studies/{study.uid}/dashboard/machine/", {"select": select, "target": "predicted"}
        )
        assert shell.status_code == 200
        api = html.unescape(re.search(r'data-api="([^"]+)"', shell.content.decode()).group(1))
        fetched = client.get(api)
        assert fetched.status_code == 200 and fetched.json()["status"] == "done"
        data = fetched.json()
        assert [s["key"] for s in data["selections"]] == select and data["target"] == "predicted"
        chart = {c["id"]: c for c in data["charts"]}["plausibility_faithfulness"]
        download = client.get(chart["csv"])
        assert download.status_code == 200 and download["Content-Type"].startswith("text/csv")
        data["faithfulness_csv"] = list(csv.reader(io.StringIO(download.content.decode())))
        dashboards.append(data)
    return dashboards


def check_dashboard(data: dict, stored: dict[tuple[str, str], dict]) -> dict[str, dict[str, float]]:
    """Each selection of one dashboard: compared with the human maps of the 8 counted texts (behavioral
    similarity against every reference, finite), its faithfulness the mean of the stored values of those
    texts with n = 8, in the faithfulness table, the chart and its CSV. Returns the table's means by method."""
    names = {s["method"]: s["name"] for s in data["selections"]}
    charts = {c["id"]: c for c in data["charts"]}
    tables = {t["id"]: t for t in data["tables"]}
    assert {"behavioral", "lexical", "pos", "plausibility_faithfulness"} <= set(charts)
    figure = charts["behavioral"]
    assert [s["name"] for s in figure["series"]] == list(names.values()) and "SAM" in figure["labels"]
    assert all(0 <= v <= 1 for s in figure["series"] for v in s["values"])
    behavioral = tables["behavioral-table"]
    faithful = tables["plausibility_faithfulness-table"]
    column = {name: i for i, name in reversed(list(enumerate(faithful["columns"])))}  # first of repeats
    figures: dict[str, dict[str, float]] = {}
    for sel in data["selections"]:
        method, name = sel["method"], sel["name"]
        assert sel["texts"] == len(COUNTED) and sel["texts_without_map"] == 0 and sel["unusable_maps"] == 0
        compared = [r for r in behavioral["rows"] if r[0] == name]
        assert {r[1] for r in compared} >= {"SAM", "CAM", "HAM1", "HAM2", "HAM3"}
        for r in compared:
            value, low, high, n = r[4:8]
            assert 0 <= low <= value <= high <= 1 and n == len(COUNTED), (name, r)
        sam = next(r for r in compared if r[1] == "SAM")
        (row,) = [r for r in faithful["rows"] if r[0] == name]
        assert row[1] == "SAM" and row[2] == sam[4] and row[column["texts measured"]] == len(COUNTED)
        figures[method] = {}
        for metric, key in (
            ("comprehensiveness AOPC", "comprehensiveness_aopc"),
            ("sufficiency AOPC", "sufficiency_aopc"),
            ("Kendall τ vs leave-one-out", "kendall_tau_loo"),
        ):
            i = column[metric]
            value, low, high, n = row[i : i + 4]
            expected = np.mean([stored[doc, method]["faithfulness"][key] for doc in COUNTED])
            assert value == pytest.approx(expected) and -1 <= low <= value <= high <= 1 and n == len(COUNTED)
            figures[method][key] = value
        assert json.dumps(name) in json.dumps(charts["plausibility_faithfulness"])
        (line,) = [line for line in data["faithfulness_csv"][1:] if line[0] == name]
        # label, plausibility and its bounds, comprehensiveness AOPC and its bounds
        assert float(line[1]) == pytest.approx(row[2]) and float(line[4]) == pytest.approx(
            row[column["comprehensiveness AOPC"]]
        )
    assert len(data["faithfulness_csv"]) == 1 + len(names)
    return figures


def test_a_researcher_explains_a_transformer_and_compares_it_with_the_people(
    client, rita, eager, tmp_path, settings
):
    dataset_pk = import_reviews(client)
    study = run_study(client, dataset_pk)
    settings.HATLAB_MODEL_DIR = str(tmp_path / "models")  # the admin's model folder holds the checkpoint
    checkpoint = build_tiny_checkpoint(
        tmp_path / "models" / "tiny-bert", [text for _, text, _ in REVIEWS], vocab_size=80, layers=LAYERS
    )
    run = train_transformer(client, eager, dataset_pk, checkpoint)
    methods = explain_everything(client, eager, run)
    stored = check_explanations(client, run, methods)
    faithfulness: dict[str, dict[str, float]] = {}
    for data in compare(client, study, run, methods):
        faithfulness.update(check_dashboard(data, stored))
    assert sorted(faithfulness) == methods
    # the figures tell the methods apart: leaving one word out of the class score ranks the words as the
    # drop of p does, and the perturbation methods are more faithful than random scores on every figure
    random_scores = faithfulness["random"]
    assert faithfulness["omit_1"]["kendall_tau_loo"] >= 0.9 > random_scores["kendall_tau_loo"]
    for method in ("omit_1", "lime"):
        assert faithfulness[method]["comprehensiveness_aopc"] > random_scores["comprehensiveness_aopc"]
        assert faithfulness[method]["sufficiency_aopc"] < random_scores["sufficiency_aopc"]
        assert faithfulness[method]["kendall_tau_loo"] > random_scores["kendall_tau_loo"]
