"""Speed of the explanation methods: seconds per document, per method, at 50, 100 and 200 words.

    .venv/bin/python bench/explain.py [--lengths 50 100 200] [--archs bilstm_attention cnn transformer]
                                      [--docs N] [--transformer-size auto|small|base]

Models have the papers' sizes (Sen et al. 2020 App. A; Lertvittayakumjorn & Toni 2019 §4.2) and random weights (speed does not depend on training);
the transformer is a BERT built from a config (``bench/train_infer.py``'s checkpoint): a small one on
the CPU and BERT-base on a GPU (``--transformer-size``), its WordPiece tokenizer trained on the texts;
it runs every method declared for the transformer family, the attention maps included. The ``lime``
package and Captum are compared where they are installed (left out with a note otherwise);
texts are YELP-HAT reviews of exactly 50 / 100 / 200 words when ../shared/data is present. Side by side
in the same run:

* the ``lime`` package's ``LimeTextExplainer`` at the same sample count, against our LIME (target:
  ours ≥ 4× faster). Its classifier function is the model's public scoring path,
  ``TrainedModel.scores``, in length-sorted batches with the same token budget per batch as our
  chunks (the fastest batching for the model on this CPU; larger batches run slower). That path
  runs the model's own ``forward``, so it gets every fast inference path the model has (the
  recurrent models' fused no-grad kernels); a Kim CNN's ``forward`` is its convolutions, while our
  methods read the CNN from a lookup table (the table below the floors shows what that is worth).
  Both run the same model on 5000 samples per text, so no LIME that runs those samples through
  our fastest exact forward path can beat the package by more than the package's time over the
  forward passes of its 5000 samples (repeated samples included): that ceiling is printed beside
  the speed-up. Where it is below 4×, the target cannot be met by LIME itself, only by a faster
  forward pass, which the package would share;
* Captum's ``IntegratedGradients`` run once per variant (dot / L2 × s / p, M = 50) against our four
  integrated-gradient variants computed together (target: ≤ 0.6× Captum's time);
* every perturbation method against the cost of its forward passes alone (target: ≤ 1.5× that floor):
  every forward pass the timed call makes, i.e. the prediction of the target classes and the
  perturbed rows in the method's own chunks.

Runs on the CPU with one thread (torch and BLAS), and also on CUDA when a GPU is present. On the CPU
a figure is the process's CPU time (so that other work on a shared machine does not count), on a GPU
the wall time; each is the fastest of ``--repeat`` runs. Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.train_infer import build_bert_checkpoint  # noqa: E402
from explain_engine.artifacts import TrainedModel  # noqa: E402
from explain_engine.explainers.gradients import GRADIENT_METHODS  # noqa: E402
from explain_engine.explainers.lime_text import LIME_BATCH, lime_rows  # noqa: E402
from explain_engine.explainers.limsse import LIMSSE_BATCH, limsse_rows  # noqa: E402
from explain_engine.explainers.perturbation import (  # noqa: E402
    NGRAM_BATCH,
    Perturbed,
    chunk_tokens,
    iter_chunks,
    ngram_perturbations,
    run_chunk,
)
from explain_engine.explainers.registry import explain_many, get, methods_for, predicted_target  # noqa: E402
from explain_engine.models import build_model  # noqa: E402
from explain_engine.subword import SubwordVocabulary  # noqa: E402
from explain_engine.vocab import Vocabulary  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "yelp-hat" / "processed_chenblair"
FILES = {50: "ham_part1(50words).csv", 100: "ham_part6(100words).csv", 200: "ham_part8(200words).csv"}
INTEGRATED = [m for m in GRADIENT_METHODS if "_int_" in m]
LIME_SAMPLES = 5000


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def texts_of_length(words: int, n: int) -> tuple[list[str], str]:
    """``n`` texts of exactly ``words`` whitespace words: YELP-HAT reviews, or made-up ones."""
    path = SHARED / FILES.get(words, "")
    if path.is_file():
        with path.open(encoding="utf-8") as fh:
            found = [r["text"] for r in csv.DictReader(fh) if len(r["text"].split()) == words]
        if len(found) >= n:
            return found[:n], f"YELP-HAT {FILES[words]}"
    rng = np.random.default_rng(words)
    pool = np.array(["the", "food", "was", "great", "but", "service", "slow", "and", "cold", "tasty", "!"])
    return [" ".join(rng.choice(pool, words)) for _ in range(n)], "synthetic"


REPEAT = 3


def clock(device: torch.device) -> float:
    """CPU time of this process on the CPU (one thread: other processes on a shared machine do not
    inflate it); wall time after synchronising on a GPU."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        return time.perf_counter()
    return time.process_time()


def timed(fn: Callable[[], object], device: torch.device, repeat: int | None = None) -> float:
    """The fastest of ``repeat`` runs (one run when a single run takes over 20 s), in seconds."""
    best = float("inf")
    for _ in range(REPEAT if repeat is None else repeat):
        start = clock(device)
        fn()
        best = min(best, clock(device) - start)
        if best > 20:
            break
    return best


def plain_forward(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor, zero) -> torch.Tensor:
    """The model's own ``forward`` on a chunk (what a black-box caller would run)."""
    if zero is None or not bool(zero.any()):
        return model(ids, mask).logits
    return model(ids, mask, embeds=model.embed(ids).masked_fill(zero[..., None], 0.0)).logits


def floor_seconds(
    bundle: TrainedModel,
    method: str,
    texts: list[str],
    device: torch.device,
    plain: bool = False,
    every_sample: bool = False,
) -> float:
    """Seconds of the forward passes alone that a perturbation method makes on ``texts``: the
    prediction of the target classes, then the perturbed rows in the method's own chunks (``plain``:
    through ``model.forward`` instead of the fastest exact path the methods use; ``every_sample``:
    LIME's 5000 samples per text, repeated ones included, as the ``lime`` package runs them)."""
    batch = bundle.encode(texts)
    model = bundle.model
    if method.startswith(("omit_", "occ_")):
        mode, n = method.split("_")
        rows, _ = ngram_perturbations(batch, int(n), mode)  # the unperturbed texts included
        size = NGRAM_BATCH
    elif method.startswith("limsse_"):
        rows, _, _ = limsse_rows(batch)
        size = LIMSSE_BATCH
    elif method == "lime":
        rows, _, _, sample_row = lime_rows(batch, n_samples=LIME_SAMPLES)
        if every_sample:
            index = torch.as_tensor(sample_row, device=rows.ids.device)
            zero = None if rows.zero is None else rows.zero[index]
            rows = Perturbed(rows.ids[index], rows.mask[index], zero, rows.doc[index])
        size = LIME_BATCH
    else:
        raise ValueError(method)
    chunks = list(iter_chunks(rows, size, chunk_tokens(model, device)))
    forward = plain_forward if plain else run_chunk

    def run() -> None:
        with torch.inference_mode():
            forward(model, batch.ids, batch.mask, None)  # the targets: the predicted classes
            for _, ids, mask, zero in chunks:
                forward(model, ids, mask, zero)

    return timed(run, device)


def captum_integrated(bundle: TrainedModel, texts: list[str], device: torch.device) -> float:
    """Seconds for Captum's IntegratedGradients run once per integrated variant (dot/L2 × s/p)."""
    try:
        from captum.attr import IntegratedGradients
    except ImportError:
        print("  Captum is not installed: no comparison with it", flush=True)
        return float("nan")

    model = bundle.model
    batch = bundle.encode(texts)
    target = predicted_target(bundle, batch)
    embeds = model.embed(batch.ids).detach()

    def score(e, ids, mask):
        return model(ids, mask, embeds=e).logits

    def prob(e, ids, mask):
        return score(e, ids, mask).softmax(-1)

    def run() -> None:
        for fn in (score, prob):
            for multiply in (True, False):  # dot: (x − x̄) × ∫ grad; L2: ∫ grad, reduced afterwards
                ig = IntegratedGradients(fn, multiply_by_inputs=multiply)
                attr = ig.attribute(
                    embeds,
                    target=target,
                    n_steps=50,
                    additional_forward_args=(batch.ids, batch.mask),
                    internal_batch_size=512,
                )
                (attr.sum(-1) if multiply else attr.norm(dim=-1)).detach()

    return timed(run, device)


def lime_package(bundle: TrainedModel, texts: list[str], device: torch.device) -> float:
    try:
        from lime.lime_text import LimeTextExplainer
    except ImportError:
        print("  the lime package is not installed: no comparison with it", flush=True)
        return float("nan")

    explainer = LimeTextExplainer(class_names=bundle.labels, random_state=0)
    target = predicted_target(bundle, bundle.encode(texts)).tolist()

    budget = chunk_tokens(bundle.model, device)

    def classify(strings: list[str]) -> np.ndarray:
        strings = [s if s.strip() else "." for s in strings]
        return bundle.scores(strings, batch_size=LIME_BATCH, kind="probs", max_tokens=budget)

    def run() -> None:
        for text, k in zip(texts, target, strict=True):
            explainer.explain_instance(
                text, classify, labels=(k,), num_features=len(text.split()), num_samples=LIME_SAMPLES
            )

    return timed(run, device)


def transformer_size(device: torch.device, size: str) -> str:
    """``auto``: the small transformer on a CPU, BERT-base on a GPU."""
    if size != "auto":
        return size
    return "base" if device.type == "cuda" else "small"


def transformer_bundle(texts: list[str], size: str, device: torch.device) -> TrainedModel:
    """A two-class BERT of ``size`` with random weights, built from a config with a WordPiece tokenizer
    trained on ``texts`` (``bench/train_infer.py``'s checkpoint) and loaded through the engine."""
    with tempfile.TemporaryDirectory(prefix="bench-transformer-") as folder:
        build_bert_checkpoint(Path(folder), texts, size)
        model = build_model("transformer", 0, 2, checkpoint=folder)
        vocab = SubwordVocabulary.from_pretrained(folder, model.max_positions)
    return TrainedModel(model, vocab, ["neg", "pos"], device=device)


def make_bundle(arch: str, texts: list[str], device: torch.device, size: str) -> TrainedModel:
    """A model of ``arch`` with random weights over the texts' vocabulary (the transformer: of ``size``)."""
    torch.manual_seed(0)
    if arch == "transformer":
        return transformer_bundle(texts, size, device)
    vocab = Vocabulary.build(texts)
    return TrainedModel(build_model(arch, len(vocab), 2), vocab, ["neg", "pos"], device=device)


def bench_one(
    arch: str, words: int, n_docs: int, device: torch.device, methods: list[str] | None, size: str = "auto"
) -> dict:
    texts, source = texts_of_length(words, n_docs)
    size = transformer_size(device, size)
    bundle = make_bundle(arch, texts, device, size)
    names = methods or methods_for(arch, standalone=True)
    explain_many(bundle, texts[:1], ["grad_dot_1s", "occ_1"])  # warm-up
    per_doc: dict[str, float] = {}
    skipped = {  # methods fitted first (their registry entry's fitted_with): not a cost per document
        name: f"needs {get(name).fitted_with.what}"
        for name in set(methods_for(arch)) - set(names)
        if methods is None
    }
    for name in names:
        try:
            seconds = timed(lambda n=name: explain_many(bundle, texts, [n], batch_size=n_docs), device)
        except ValueError as exc:  # a method that needs more than the texts (e.g. fitted trees)
            skipped[name] = str(exc)
            continue
        per_doc[name] = seconds / n_docs
    shared = {"gradients": {"tolerance": None}}
    per_doc["grad_all8_shared"] = (
        timed(lambda: explain_many(bundle, texts, GRADIENT_METHODS, batch_size=n_docs), device) / n_docs
    )
    ours_ig = timed(lambda: explain_many(bundle, texts, INTEGRATED, batch_size=n_docs, params=shared), device)
    captum_ig = captum_integrated(bundle, texts, device)
    encoded = bundle.encode(texts)

    def predict() -> None:
        with torch.inference_mode():
            run_chunk(bundle.model, encoded.ids, encoded.mask, None)

    target_pass = timed(predict, device) / n_docs  # counted in every floor below
    floors, ratios, plain = {}, {}, {}
    for name in list(per_doc):
        if name.startswith(("omit_", "occ_", "limsse_")) or name == "lime":
            floors[name] = floor_seconds(bundle, name, texts, device) / n_docs
            ratios[name] = per_doc[name] / floors[name]
            if arch == "cnn":  # the methods run the CNN through a lookup table; this is model.forward
                plain[name] = floor_seconds(bundle, name, texts, device, plain=True) / n_docs
    lime_pkg, lime_all = float("nan"), float("nan")
    if "lime" in per_doc:
        lime_pkg = lime_package(bundle, texts, device) / n_docs
        lime_all = floor_seconds(bundle, "lime", texts, device, every_sample=True) / n_docs
    return {
        "arch": arch if arch != "transformer" else f"transformer-{size}",
        "words": words,
        "tokens_per_doc": float(encoded.mask.sum()) / n_docs,
        "docs": n_docs,
        "texts": source,
        "device": str(device),
        "seconds_per_doc": per_doc,
        "integrated_ours_per_doc": ours_ig / n_docs,
        "integrated_captum_per_doc": captum_ig / n_docs,
        "integrated_ratio": ours_ig / captum_ig,
        "lime_package_per_doc": lime_pkg,
        "lime_speedup": lime_pkg / per_doc["lime"] if "lime" in per_doc else float("nan"),
        "lime_all_samples_floor_per_doc": lime_all,
        "lime_speedup_ceiling": lime_pkg / lime_all if "lime" in per_doc else float("nan"),
        "forward_floor_per_doc": floors,
        "target_pass_per_doc": target_pass,
        "floor_ratio": ratios,
        "plain_forward_floor_per_doc": plain,
        "skipped": skipped,
    }


def print_tables(results: list[dict]) -> None:
    columns = [f"{r['arch']}/{r['words']} ({r['docs']})" for r in results]
    methods = sorted({m for r in results for m in r["seconds_per_doc"]})
    width = max(len(m) for m in [*methods, "integrated: ours/Captum"]) + 2
    devices = ", ".join(sorted({r["device"] for r in results}))
    print(f"\nseconds per document ({devices}; column: architecture/words (documents per batch))")
    print(" " * width + "".join(f"{c:>24}" for c in columns))
    tokens = [f"{r['tokens_per_doc']:.0f}" for r in results]
    print(f"{'(model tokens per document)':<{width}}" + "".join(f"{c:>24}" for c in tokens))
    for m in methods:
        cells = [r["seconds_per_doc"].get(m) for r in results]
        print(f"{m:<{width}}" + "".join(f"{c:>24.4f}" if c is not None else f"{'-':>24}" for c in cells))
    for r in results:
        for name, why in r["skipped"].items():
            print(f"skipped {name} on {r['arch']}/{r['words']}: {why}")
    print("\nforward-pass floor of the perturbation methods (seconds per document) and method / floor")
    floor_methods = sorted({m for r in results for m in r["forward_floor_per_doc"]})
    cells = [f"{r['target_pass_per_doc']:.4f}" for r in results]
    print(f"{'(the targets: predicting)':<{width}}" + "".join(f"{c:>24}" for c in cells))
    for m in floor_methods:
        cells = [
            f"{r['forward_floor_per_doc'][m]:.4f} ({r['floor_ratio'][m]:.2f}x)"
            if m in r["floor_ratio"]
            else "-"
            for r in results
        ]
        print(f"{m:<{width}}" + "".join(f"{c:>24}" for c in cells))
    plain_methods = sorted({m for r in results for m in r["plain_forward_floor_per_doc"]})
    if plain_methods:
        print("\nthe same forward passes through the model's own forward (CNN), and method / that")
        for m in plain_methods:
            cells = [
                f"{r['plain_forward_floor_per_doc'][m]:.4f} ({r['seconds_per_doc'][m] / r['plain_forward_floor_per_doc'][m]:.2f}x)"
                if m in r["plain_forward_floor_per_doc"]
                else "-"
                for r in results
            ]
            print(f"{m:<{width}}" + "".join(f"{c:>24}" for c in cells))
    print("\ncomparisons (target)")
    rows = [
        ("lime package s/doc", [f"{r['lime_package_per_doc']:.3f}" for r in results]),
        ("LIME speed-up (>= 4x)", [f"{r['lime_speedup']:.2f}x" for r in results]),
        ("forwards of 5000 samples s/doc", [f"{r['lime_all_samples_floor_per_doc']:.3f}" for r in results]),
        ("ceiling: package / those", [f"{r['lime_speedup_ceiling']:.2f}x" for r in results]),
        ("Captum IG x4 s/doc", [f"{r['integrated_captum_per_doc']:.3f}" for r in results]),
        ("our IG x4 s/doc", [f"{r['integrated_ours_per_doc']:.3f}" for r in results]),
        ("integrated: ours/Captum (<= 0.6)", [f"{r['integrated_ratio']:.2f}" for r in results]),
    ]
    for label, cells in rows:
        print(f"{label:<{width}}" + "".join(f"{c:>24}" for c in cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--archs", nargs="+", default=["bilstm_attention", "cnn", "transformer"])
    parser.add_argument(
        "--transformer-size",
        choices=["auto", "small", "base"],
        default="auto",
        help="the transformer's size: small (CPU), base (BERT-base), auto: small on a CPU, base on a GPU",
    )
    parser.add_argument(
        "--docs",
        type=int,
        help="documents per setting, explained as one batch (default: 16 for the CNN, 2 else)",
    )
    parser.add_argument("--methods", help="comma-separated methods (default: all that fit)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (the fastest is kept)")
    parser.add_argument("--no-cuda", action="store_true")
    parser.add_argument("--no-cpu", action="store_true", help="run on the GPU only")
    args = parser.parse_args(argv)
    global REPEAT
    REPEAT = max(1, args.repeat)
    torch.set_num_threads(1)
    devices = [] if args.no_cpu else [torch.device("cpu")]
    if torch.cuda.is_available() and not args.no_cuda:
        devices.append(torch.device("cuda"))
    methods = args.methods.split(",") if args.methods else None
    print(f"CPU: {cpu_name()}; torch {torch.__version__}, 1 thread; GPU: {torch.cuda.is_available()}")
    results = []
    with threadpool_limits(1):
        for device in devices:
            for arch in args.archs:
                for words in args.lengths:
                    started = time.perf_counter()
                    n_docs = args.docs or (16 if arch == "cnn" else 2)
                    results.append(bench_one(arch, words, n_docs, device, methods, args.transformer_size))
                    print(
                        f"  {device} {arch} {words} words: {time.perf_counter() - started:.0f} s", flush=True
                    )
    print_tables(results)
    verdict = {
        "lime_4x": all(r["lime_speedup"] >= 4 for r in results if not np.isnan(r["lime_speedup"])),
        "integrated_0.6": all(
            r["integrated_ratio"] <= 0.6 for r in results if not np.isnan(r["integrated_ratio"])
        ),
        "floor_1.5": all(v <= 1.5 for r in results for v in r["floor_ratio"].values()),
    }
    print(json.dumps({"bench": "explain", "cpu": cpu_name(), "targets_met": verdict, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
