"""Training and inference throughput of every architecture at the papers' sizes (and, optionally,
its YELP-HAT test accuracy).

    python bench/train_infer.py                      # throughput on CPU (and on CUDA when present)
    python bench/train_infer.py --accuracy           # also train each model on YELP-HAT raw, 80/10/10
    python bench/train_infer.py --archs transformer --transformer-size base --cuda-only   # BERT-base on a GPU

Throughput: texts are YELP-HAT raw reviews when ``../shared/data`` is there (else the labelled
sentences, else random token sequences of 60 tokens); models take their registry defaults
(Sen et al. 2020 App. A; Lertvittayakumjorn & Toni 2019 §4.2) and train with their paper batch size and learning rate. Training examples/s
counts forward + backward + optimizer step (Adam; AdamW with its schedule for the transformer); inference
examples/s counts eval-mode forward passes without gradients, 128 texts a batch. Prints a table, then one
JSON line.

The transformer family needs a checkpoint; nothing is downloaded: unless ``--checkpoint`` names a real one,
the bench builds a BERT from a configuration (``--transformer-size small``: 2 layers of 128, 2 heads, for a
CPU; ``base``: BERT-base's 12 layers of 768, 12 heads, 110 M parameters, for a GPU; Devlin et al. 2019 §3)
with a WordPiece tokenizer trained on the bench texts, saves both, and loads them through the engine like any
checkpoint. Texts are cut to the family's 256 pieces. Such a model is randomly initialised, so ``--accuracy``
trains the transformer only from a real ``--checkpoint``.
"""

from __future__ import annotations

import argparse
import glob
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explain_engine.datasets import read_labelled_sentences  # noqa: E402
from explain_engine.models import ARCHITECTURES, FROM_CHECKPOINT, available_architectures, build_model  # noqa: E402
from explain_engine.models.transformer import hf_transformers  # noqa: E402
from explain_engine.subword import SubwordVocabulary, train_wordpiece  # noqa: E402
from explain_engine.training import PAPER_DEFAULTS, TrainConfig, make_optimizer, train  # noqa: E402
from explain_engine.vocab import TokenizedText, Vocabulary  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
YELP_RAW = DATA / "yelp-hat" / "raw"
# BERT configurations built from a config (Devlin et al. 2019 §3: BERT-base is L=12, H=768, A=12).
TRANSFORMER_SIZES = {
    "small": {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512},
    "base": {
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
    },
}


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({torch.get_num_threads()} thread(s))"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} ({torch.get_num_threads()} thread(s))"


def yelp_records() -> list[dict]:
    from explain_engine.datasets.yelphat import read_raw

    return read_raw(sorted(glob.glob(str(YELP_RAW / "*.csv"))))


def bench_texts(n: int, seed: int) -> tuple[list[str], str]:
    rng = np.random.default_rng(seed)
    if YELP_RAW.exists():
        texts = [r["text"] for r in yelp_records()]
        source = "YELP-HAT raw reviews"
    elif (DATA / "uci-sentiment-labelled-sentences").exists():
        texts = [r["text"] for r in read_labelled_sentences(DATA / "uci-sentiment-labelled-sentences")]
        source = "labelled sentences"
    else:
        words = [f"w{i}" for i in range(5000)]
        texts = [" ".join(rng.choice(words, 60)) for _ in range(n)]
        source = "random 60-token texts"
    picked = rng.choice(len(texts), size=n, replace=len(texts) < n)
    return [texts[i] for i in picked], source


def build_bert_checkpoint(folder: Path, texts: list[str], size: str, vocab_size: int = 8000) -> Path:
    """A randomly initialised BERT of ``size`` (:data:`TRANSFORMER_SIZES`) and a WordPiece tokenizer trained
    on ``texts``, written with ``save_pretrained`` to ``folder`` (the optional extra ``transformers``)."""
    tokenizer = train_wordpiece(texts, vocab_size)
    config = hf_transformers().BertConfig(vocab_size=len(tokenizer), **TRANSFORMER_SIZES[size])
    torch.manual_seed(0)
    hf_transformers().BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def throughput(
    name: str,
    items: list[TokenizedText],
    vocab_size: int,
    device: torch.device,
    batches: int,
    model_args: dict | None = None,
) -> dict:
    """Training and inference examples/s for ``name`` at its default sizes (or ``model_args``) on ``device``."""
    torch.manual_seed(0)
    model = build_model(name, vocab_size, 2, **(model_args or {})).to(device)
    hp = TrainConfig(architecture=name).resolved()
    bs = hp["batch_size"]
    optimizer, schedule = make_optimizer(model, hp, batches + 1)
    labels = torch.arange(len(items)) % 2

    def batch_at(k: int, size: int):
        idx = [(k * size + j) % len(items) for j in range(size)]
        batch = Vocabulary.collate([items[i] for i in idx], [""] * size).to(device)
        return batch, labels[idx].to(device)

    def train_step(k: int) -> None:
        model.train()
        batch, y = batch_at(k, bs)
        out = model(batch.ids, batch.mask)
        example = nn.functional.cross_entropy(out.logits, y, reduction="none")
        loss = example.mean() + model.auxiliary_loss(out, example, batch.mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if schedule is not None:
            schedule.step()

    train_step(0)  # warm-up
    sync(device)
    start = time.perf_counter()
    for k in range(1, batches + 1):
        train_step(k)
    sync(device)
    train_rate = batches * bs / (time.perf_counter() - start)

    model.eval()
    infer_bs = 128
    with torch.no_grad():
        batch, _ = batch_at(0, infer_bs)
        model(batch.ids, batch.mask)
        sync(device)
        start = time.perf_counter()
        for k in range(1, batches + 1):
            batch, _ = batch_at(k, infer_bs)
            model(batch.ids, batch.mask)
        sync(device)
    infer_rate = batches * infer_bs / (time.perf_counter() - start)
    params = sum(p.numel() for p in model.parameters())
    return {
        "architecture": name,
        "device": str(device),
        "mean_tokens": float(np.mean([len(it.ids) for it in items])),
        "batch_size": bs,
        "params": params,
        "train_examples_per_s": train_rate,
        "infer_examples_per_s": infer_rate,
    }


def accuracy_runs(archs: list[str], args: argparse.Namespace) -> list[dict]:
    """Train every architecture on YELP-HAT raw (labels from Input.label, balanced 80/10/10)."""
    records = yelp_records()
    rows = []
    for name in archs:
        pretrained = name in FROM_CHECKPOINT
        if pretrained and not args.checkpoint:
            print(
                f"  {name:<17} skipped: a randomly initialised model; give --checkpoint to fine-tune a real one"
            )
            continue
        config = TrainConfig(
            architecture=name,
            model={"checkpoint": args.checkpoint} if pretrained else {},
            epochs=args.epochs,
            batch_size=None if pretrained else args.batch_size,  # the family's own (Devlin et al. 2019)
            lr=None if pretrained else args.lr,
            patience=args.patience,
            max_len=args.max_len,
            seed=args.seed,
            word_dropout=0.0 if pretrained else args.word_dropout,
            progress_bar=False,
        )
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            bundle = train(records, config, out_dir=out)
            test_ids = set(json.loads((Path(out) / "splits.json").read_text())["test"])
        seconds = time.perf_counter() - start
        m = bundle.metrics
        test_texts = [r["text"] for r in records if r["id"] in test_ids]
        maps = [p["attention"] for p in bundle.predict(test_texts)]
        # share of a text's words the model selects (hard attention only; humans: about 0.2-0.25)
        share = (
            float(np.mean([np.mean(a) for a in maps])) if bundle.model.attention_pooling == "max" else None
        )
        rows.append(
            {
                "architecture": name,
                "selected_share": share,
                "test_accuracy": m["test"]["accuracy"],
                "test_macro_f1": m["test"]["macro_f1"],
                "validation_accuracy": m["validation"]["accuracy"],
                "n_test": m["n_test"],
                "epochs_run": m["epochs_run"],
                "best_epoch": m["best_epoch"],
                "seconds": seconds,
            }
        )
        selected = "" if share is None else f"  selects {share:.2f} of the words"
        print(
            f"  {name:<17} test acc {rows[-1]['test_accuracy']:.3f}  val acc {rows[-1]['validation_accuracy']:.3f}"
            f"  epochs {m['epochs_run']:>2}  {seconds:.0f} s{selected}",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--archs", nargs="*", default=available_architectures(), choices=sorted(ARCHITECTURES)
    )
    parser.add_argument("--batches", type=int, default=3, help="timed batches per measurement")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (torch.set_num_threads)")
    parser.add_argument("--cpu-only", action="store_true")
    parser.add_argument("--cuda-only", action="store_true", help="only the CUDA device (e.g. BERT-base)")
    parser.add_argument(
        "--transformer-size",
        choices=sorted(TRANSFORMER_SIZES),
        default="small",
        help="the BERT built from a config: small (CPU) or base (BERT-base, for a GPU)",
    )
    parser.add_argument(
        "--checkpoint", help="transformer: a real checkpoint folder or hub name instead of the built BERT"
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--accuracy", action="store_true", help="also train each model on YELP-HAT and test it"
    )
    parser.add_argument("--epochs", type=int, default=10, help="--accuracy: at most this many epochs")
    parser.add_argument("--batch-size", type=int, default=32, help="--accuracy: batch size")
    parser.add_argument("--lr", type=float, default=2e-3, help="--accuracy: Adam learning rate")
    parser.add_argument("--patience", type=int, default=3, help="--accuracy: early-stopping patience")
    parser.add_argument(
        "--word-dropout", type=float, default=0.2, help="--accuracy: share of tokens made <unk>"
    )
    parser.add_argument("--max-len", type=int, help="--accuracy: model tokens kept per review (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    devices = [] if args.cuda_only else [torch.device("cpu")]
    if torch.cuda.is_available() and not args.cpu_only:
        devices.append(torch.device("cuda"))
    if not devices:
        raise SystemExit("--cuda-only: no CUDA device here")
    n_texts = 128 * (args.batches + 1)
    texts, source = bench_texts(n_texts, args.seed)
    vocab = Vocabulary.build(texts, min_count=1)
    items = [vocab.tokenize(t) for t in texts]
    mean_len = float(np.mean([len(it.ids) for it in items]))
    print(f"texts: {source}, {n_texts} drawn, mean {mean_len:.0f} model tokens; vocabulary {len(vocab)}")
    inputs = {name: (items, len(vocab), None) for name in args.archs if name not in FROM_CHECKPOINT}
    scratch = tempfile.TemporaryDirectory()
    transformer = None
    if any(name in FROM_CHECKPOINT for name in args.archs):
        checkpoint = args.checkpoint or str(
            build_bert_checkpoint(Path(scratch.name), texts, args.transformer_size)
        )
        pieces = SubwordVocabulary.from_pretrained(checkpoint)
        max_len = TrainConfig(architecture="transformer").resolved()["max_len"]
        sub_items = [pieces.tokenize(t, max_len) for t in texts]
        transformer = args.checkpoint or f"BERT {args.transformer_size} from a config"
        print(
            f"transformer: {transformer}; mean {np.mean([len(it.ids) for it in sub_items]):.0f} pieces"
            f" (at most {max_len}); vocabulary {len(pieces)}"
        )
        for name in args.archs:
            if name in FROM_CHECKPOINT:
                inputs[name] = (sub_items, len(pieces), {"checkpoint": checkpoint})
    results = []
    for device in devices:
        print(f"\ndevice: {device_name(device)}")
        print(f"  {'architecture':<17} {'params':>10} {'batch':>5} {'train ex/s':>11} {'infer ex/s':>11}")
        for name in args.archs:
            row = throughput(name, *inputs[name][:2], device, args.batches, inputs[name][2])
            row["device_name"] = device_name(device)
            results.append(row)
            print(
                f"  {name:<17} {row['params']:>10,} {row['batch_size']:>5} {row['train_examples_per_s']:>11.1f}"
                f" {row['infer_examples_per_s']:>11.1f}",
                flush=True,
            )
    accuracy = []
    if args.accuracy:
        if not YELP_RAW.exists():
            raise SystemExit(f"--accuracy needs the YELP-HAT raw files in {YELP_RAW}")
        print(
            f"\nYELP-HAT raw (all five parts), balanced 80/10/10, seed {args.seed}; up to {args.epochs} epochs, "
            f"batch {args.batch_size}, lr {args.lr}, word dropout {args.word_dropout}, max tokens {args.max_len}"
        )
        accuracy = accuracy_runs(args.archs, args)
    scratch.cleanup()
    summary = {
        "bench": "train_infer",
        "text_source": source,
        "mean_tokens": mean_len,
        "threads": args.threads,
        "transformer": transformer,
        "paper_defaults": PAPER_DEFAULTS,
        "throughput": results,
        "yelphat_accuracy": accuracy,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
