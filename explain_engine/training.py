"""Training with the papers' hyper-parameters, early stopping on validation loss and fixed seeds.

``train(records, config, out_dir=None, on_progress=None) -> TrainedModel``. Records are dicts
with ``id``, ``text`` and ``label``. Unless they carry their own ``split`` field, they are
balanced and split 80/10/10 by class with the seed (Sen et al. 2020 §5.1). The vocabulary is built
from the training split only. Batches group texts of similar length (fewer padded steps), in a
seeded random order. A transformer (``architecture="transformer"``, ``model={"checkpoint": ...}``) is
fine-tuned from its checkpoint with the checkpoint's own sub-word tokenizer
(:class:`explain_engine.subword.SubwordVocabulary`), AdamW with weight decay and a linear warm-up and
decay of the learning rate (Devlin et al. 2019 App. A.3). A "weaker twin" (Lertvittayakumjorn & Toni 2019 §4.2: the same architecture under-trained for
one epoch, or trained on a narrower subset) is a config made by :func:`weaker_twin`; its
validation and test splits are those of the full model, so the two are comparable.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import f1_score
from torch import nn
from tqdm import tqdm

from explain_engine.artifacts import TrainedModel, pick_device
from explain_engine.datasets.splits import balance, given_splits, split_records
from explain_engine.models import ARCHITECTURES, TWINS, TextClassifier, TransformerClassifier, build_model
from explain_engine.subword import SubwordVocabulary
from explain_engine.vocab import TokenizedText, Vocabulary

ProgressCallback = Callable[[float, dict], None]

_ATTENTION_RNN = {"lr": 1e-4, "batch_size": 128, "epochs": 64}  # Sen et al. 2020 App. A.2
# Not in Poerner et al. 2018's main text: Adam's defaults.
_POERNER_2018 = {"lr": 1e-3, "batch_size": 64, "epochs": 30}
PAPER_DEFAULTS: dict[str, dict] = {
    "lstm_attention": _ATTENTION_RNN,
    "bilstm_attention": _ATTENTION_RNN,
    "gru_attention": _ATTENTION_RNN,
    "bigru_attention": _ATTENTION_RNN,
    "rationale": _ATTENTION_RNN,
    "cnn": {
        "lr": 1e-3,
        "batch_size": 32,
        "epochs": 30,
    },  # Lertvittayakumjorn & Toni 2019: Keras Adam (defaults), until val loss settles
    "lstm": _POERNER_2018,
    "bilstm": _POERNER_2018,
    "gru": _POERNER_2018,
    "bigru": _POERNER_2018,
    "qrnn": _POERNER_2018,
    # Devlin et al. 2019 App. A.3 (batch 16 or 32, lr 5e-5 / 3e-5 / 2e-5, 2-4 epochs); weight decay 0.01
    # and 10 % warm-up as in BERT's fine-tuning code; 256 tokens keep a review's start within BERT's 512
    "transformer": {
        "lr": 2e-5,
        "batch_size": 16,
        "epochs": 3,
        "optimizer": "adamw",
        "weight_decay": 0.01,
        "warmup": 0.1,
        "max_len": 256,
    },
}
#: What a family's defaults leave unset: Adam without weight decay, a constant rate, whole texts.
RECIPE_DEFAULTS = {"optimizer": "adam", "weight_decay": 0.0, "warmup": 0.0, "max_len": None}


@dataclasses.dataclass
class TrainConfig:
    """What to train and how. ``None`` for ``epochs``/``batch_size``/``lr`` means the paper's value
    for the architecture (:data:`PAPER_DEFAULTS`)."""

    architecture: str = "bilstm_attention"
    model: dict = dataclasses.field(default_factory=dict)  # constructor overrides, e.g. {"hidden_size": 50}
    epochs: int | None = None
    batch_size: int | None = None
    lr: float | None = None
    weight_decay: float | None = None  # None: the architecture's (0.0, or 0.01 for a transformer)
    patience: int | None = 5  # epochs without a better validation loss before stopping; None: never
    grad_clip: float | None = 5.0
    word_dropout: float = 0.0  # share of training tokens replaced by <unk> in each batch (Iyyer et al. 2015)
    min_count: int = 2
    max_vocab: int | None = None
    max_len: int | None = None  # model tokens kept per text (the first ones); None: the architecture's
    seed: int = 13
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
    balance: bool = True
    use_given_splits: bool = True  # honour records' own "split" field when every record has one
    train_fraction: float = 1.0  # weaker twin: stratified share of the training split that is used
    train_where: dict | None = None  # weaker twin: {field: [allowed values]} on records or their metadata
    device: str | None = None
    progress_bar: bool = True

    def resolved(self) -> dict:
        """The effective epochs, batch size, learning rate, optimizer, weight decay, warm-up share
        and token limit."""
        # an explanation-informed twin trains with its target's recipe (Prasad et al. 2021 §4.1)
        name = self.model.get("target", "cnn") if self.architecture in TWINS else self.architecture
        if name not in PAPER_DEFAULTS:
            raise ValueError(
                f"unknown architecture {name!r}; choose one of {', '.join(sorted(PAPER_DEFAULTS))}"
            )
        defaults = {**RECIPE_DEFAULTS, **PAPER_DEFAULTS[name]}
        return {
            "epochs": self.epochs if self.epochs is not None else defaults["epochs"],
            "batch_size": self.batch_size if self.batch_size is not None else defaults["batch_size"],
            "lr": self.lr if self.lr is not None else defaults["lr"],
            "optimizer": defaults["optimizer"],
            "weight_decay": self.weight_decay if self.weight_decay is not None else defaults["weight_decay"],
            "warmup": defaults["warmup"],
            "max_len": self.max_len if self.max_len is not None else defaults["max_len"],
        }

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["fractions"] = list(self.fractions)
        return data


def weaker_twin(
    config: TrainConfig, how: str = "one_epoch", fraction: float = 0.25, where: dict | None = None
) -> TrainConfig:
    """The config of a clearly weaker model of the same architecture (Lertvittayakumjorn & Toni 2019 §4.2).

    ``how='one_epoch'``: under-trained, one epoch and no early stopping (Lertvittayakumjorn & Toni 2019's Amazon twin).
    ``how='subset'``: trained on a narrower subset of the training split: the records matching
    ``where`` (``{field: [values]}``, Lertvittayakumjorn & Toni 2019's ArXiv twin), else a stratified ``fraction``.
    """
    if how == "one_epoch":
        return dataclasses.replace(config, epochs=1, patience=None)
    if how == "subset":
        if where is not None:
            return dataclasses.replace(config, train_where=dict(where))
        if not 0 < fraction < 1:
            raise ValueError(f"fraction must lie in (0, 1), got {fraction}")
        return dataclasses.replace(config, train_fraction=fraction)
    raise ValueError(f"unknown weaker twin {how!r}; use 'one_epoch' or 'subset'")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _checked(records: Sequence[dict]) -> list[dict]:
    out = []
    for n, rec in enumerate(records):
        ident = rec.get("id", n)
        if not isinstance(rec.get("text"), str) or not rec["text"].split():
            raise ValueError(f"record {ident!r}: field 'text' is missing or has no words")
        if rec.get("label") is None or rec["label"] == "":
            raise ValueError(f"record {ident!r}: field 'label' is missing")
        out.append({**rec, "label": str(rec["label"])})
    return out


def _narrow(train: list[dict], config: TrainConfig) -> list[dict]:
    if config.train_where:

        def keep(rec: dict) -> bool:
            meta = rec.get("metadata") or {}
            return all(rec.get(k, meta.get(k)) in set(v) for k, v in (config.train_where or {}).items())

        train = [rec for rec in train if keep(rec)]
    if config.train_fraction < 1.0:
        train, _, _ = split_records(
            train, (config.train_fraction, 1.0 - config.train_fraction, 0.0), config.seed
        )
    if not train:
        raise ValueError("no training records left after narrowing the training split")
    return train


def _length_batches(lengths: Sequence[int], batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Seeded random batches of similar length: shuffle, sort within pools of 50 batches, shuffle batches."""
    order = rng.permutation(len(lengths))
    pool = batch_size * 50
    batches: list[np.ndarray] = []
    for start in range(0, len(order), pool):
        chunk = order[start : start + pool]
        chunk = chunk[np.argsort([lengths[i] for i in chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def make_vocabulary(config: TrainConfig, texts: Sequence[str]) -> Vocabulary | SubwordVocabulary:
    """The tokenizer of a new model: a transformer checkpoint's own, else a vocabulary of ``texts``."""
    family = ARCHITECTURES.get(config.architecture)
    if family is not None and issubclass(family, TransformerClassifier):
        checkpoint = config.model.get("checkpoint")
        if not checkpoint:
            raise ValueError(
                "the transformer family needs a checkpoint: a local model folder or a hub name (--checkpoint)"
            )
        return SubwordVocabulary.from_pretrained(checkpoint)
    return Vocabulary.build(texts, config.min_count, config.max_vocab)


def make_optimizer(
    model: nn.Module, hp: dict, total_steps: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler | None]:
    """Adam (the recurrent and convolutional papers) or AdamW with a linear warm-up over ``hp["warmup"]``
    of the steps, then linear decay to zero (Devlin et al. 2019 App. A.3); no schedule without warm-up."""
    if hp["optimizer"] == "adamw":
        optimizer: torch.optim.Optimizer = torch.optim.AdamW(
            model.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"]
        )
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"])
    if not hp["warmup"]:
        return optimizer, None
    warm = max(1, round(hp["warmup"] * total_steps))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total_steps - step) / max(1, total_steps - warm))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def evaluate(
    model: TextClassifier,
    items: Sequence[TokenizedText],
    y: torch.Tensor,
    device: torch.device,
    batch_size: int = 128,
) -> dict:
    """Loss, accuracy and macro-F1 of ``model`` (eval mode) on tokenized texts with labels ``y``."""
    if not items:
        return {"n": 0, "loss": float("nan"), "accuracy": float("nan"), "macro_f1": float("nan")}
    model.eval()
    order = np.argsort([len(it.ids) for it in items], kind="stable")
    preds = torch.empty(len(items), dtype=torch.long)
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = torch.as_tensor(order[start : start + batch_size])
            batch = Vocabulary.collate([items[i] for i in idx.tolist()], [""] * len(idx)).to(device)
            logits = model(batch.ids, batch.mask).logits
            total += nn.functional.cross_entropy(logits, y[idx].to(device), reduction="sum").item()
            preds[idx] = logits.argmax(-1).cpu()
    return {
        "n": len(items),
        "loss": total / len(items),
        "accuracy": float((preds == y).double().mean()),
        "macro_f1": float(f1_score(y.numpy(), preds.numpy(), average="macro", zero_division=0)),
    }


@dataclasses.dataclass
class _Prepared:
    """What training starts from: the labels, the three splits (records and tokenized texts with their
    label indices), the tokenizer and the untrained model on its device."""

    labels: list
    splits: tuple[list[dict], list[dict], list[dict]]
    vocab: Vocabulary | SubwordVocabulary
    model: TextClassifier
    x_train: list[TokenizedText]
    y_train: torch.Tensor
    x_val: list[TokenizedText]
    y_val: torch.Tensor
    x_test: list[TokenizedText]
    y_test: torch.Tensor


def _prepare(records: Sequence[dict], config: TrainConfig, hp: dict, device: torch.device) -> _Prepared:
    """Check and split the records, seed, build the tokenizer from the training split, the model, and
    tokenize the three splits (in this order: the seeded generators see what they always saw)."""
    records = _checked(records)
    labels = sorted({rec["label"] for rec in records})
    if len(labels) < 2:
        raise ValueError(f"need at least two labels to train a classifier, found {labels}")
    splits = given_splits(records) if config.use_given_splits else None
    if splits is None:
        pool = balance(records, config.seed) if config.balance else records
        splits = split_records(pool, config.fractions, config.seed)
    train_recs, val_recs, test_recs = splits
    train_recs = _narrow(train_recs, config)

    seed_everything(config.seed)
    vocab = make_vocabulary(config, [rec["text"] for rec in train_recs])
    index = {label: k for k, label in enumerate(labels)}

    model = build_model(config.architecture, len(vocab), len(labels), **config.model).to(device)
    if isinstance(vocab, SubwordVocabulary):
        assert isinstance(model, TransformerClassifier)  # a sub-word vocabulary is a transformer's
        vocab.max_positions = model.max_positions

    def tokenized(recs: list[dict]) -> tuple[list[TokenizedText], torch.Tensor]:
        items = [vocab.tokenize(rec["text"], hp["max_len"]) for rec in recs]
        return items, torch.tensor([index[rec["label"]] for rec in recs], dtype=torch.long)

    (x_train, y_train), (x_val, y_val), (x_test, y_test) = (
        tokenized(r) for r in (train_recs, val_recs, test_recs)
    )
    if hasattr(model, "bind_vocabulary"):  # a model that needs a token's id (the informed twin's separator)
        model.bind_vocabulary(vocab)  # type: ignore[operator]  # torch types a Module's attributes as Tensor | Module
    return _Prepared(
        labels,
        (train_recs, val_recs, test_recs),
        vocab,
        model,
        x_train,
        y_train,
        x_val,
        y_val,
        x_test,
        y_test,
    )


@dataclasses.dataclass
class _EarlyStopping:
    """Keeps the state of the epoch with the lowest monitored loss; says stop after ``patience`` epochs
    without a new lowest (never, when ``patience`` is None)."""

    patience: int | None
    best_loss: float = math.inf
    best_epoch: int = 0
    best_state: dict | None = None
    stale: int = 0

    def should_stop(self, monitored: float, epoch: int, model: nn.Module) -> bool:
        if monitored < self.best_loss:
            self.best_loss, self.best_epoch, self.stale = monitored, epoch, 0
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            return False
        self.stale += 1
        return self.patience is not None and self.stale >= self.patience

    def restore_best(self, model: nn.Module) -> None:
        if self.best_state is not None:
            model.load_state_dict(self.best_state)


@dataclasses.dataclass
class _Loop:
    """One training run's moving parts: the prepared data and model, the optimizer and its schedule, the
    batch order's generator, the step count, the progress bar and callback."""

    prep: _Prepared
    config: TrainConfig
    hp: dict
    device: torch.device
    optimizer: torch.optim.Optimizer
    schedule: torch.optim.lr_scheduler.LRScheduler | None
    rng: np.random.Generator
    total_steps: int
    bar: tqdm
    on_progress: ProgressCallback | None
    step: int = 0


def _dropped_words(ids: torch.Tensor, mask: torch.Tensor, loop: _Loop) -> torch.Tensor:
    """``ids`` with each real token replaced by the unknown token with probability ``word_dropout``
    (a transformer's special tokens never)."""
    vocab, device = loop.prep.vocab, loop.device
    drop = (torch.rand(ids.shape) < loop.config.word_dropout).to(device) & mask
    if vocab.special_ids:  # a transformer's [CLS] / [SEP] are never dropped
        drop &= ~torch.isin(ids, torch.tensor(vocab.special_ids, device=device))
    return ids.masked_fill(drop, vocab.unk_id)


def _train_epoch(loop: _Loop, epoch: int, lengths: list[int]) -> tuple[int, float, int]:
    """One pass over the training split in length batches; ``(examples, summed loss, correct)``."""
    prep, config, device, model = loop.prep, loop.config, loop.device, loop.prep.model
    model.train()
    seen, loss_sum, correct = 0, 0.0, 0
    for idx in _length_batches(lengths, loop.hp["batch_size"], loop.rng):
        batch = Vocabulary.collate([prep.x_train[i] for i in idx], [""] * len(idx)).to(device)
        target = prep.y_train[idx].to(device)
        ids = _dropped_words(batch.ids, batch.mask, loop) if config.word_dropout > 0 else batch.ids
        output = model(ids, batch.mask)
        example_loss = nn.functional.cross_entropy(output.logits, target, reduction="none")
        loss = example_loss.mean() + model.auxiliary_loss(output, example_loss, batch.mask)
        loop.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip:
            nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        loop.optimizer.step()
        if loop.schedule is not None:
            loop.schedule.step()
        loop.step += 1
        seen += len(idx)
        loss_sum += example_loss.sum().item()
        correct += int((output.logits.argmax(-1) == target).sum())
        info = {"epoch": epoch, "step": loop.step, "loss": loss_sum / seen, "accuracy": correct / seen}
        loop.bar.update(1)
        loop.bar.set_postfix(epoch=epoch, loss=f"{info['loss']:.4f}", acc=f"{info['accuracy']:.3f}")
        if loop.on_progress:
            loop.on_progress(min(loop.step / loop.total_steps, 1.0), info)
    return seen, loss_sum, correct


def _fit(
    prep: _Prepared, config: TrainConfig, hp: dict, device: torch.device, on_progress: ProgressCallback | None
) -> tuple[list[dict], int, float]:
    """The epoch loop with validation after every epoch and early stopping; leaves the model at its best
    epoch. Returns the history, the best epoch and the seconds it took."""
    rng = np.random.default_rng(config.seed)
    lengths = [len(it.ids) for it in prep.x_train]
    steps_per_epoch = math.ceil(len(prep.x_train) / hp["batch_size"])
    total_steps = hp["epochs"] * steps_per_epoch
    optimizer, schedule = make_optimizer(prep.model, hp, total_steps)
    history: list[dict] = []
    stopping = _EarlyStopping(config.patience)
    started = time.perf_counter()
    bar = tqdm(total=total_steps, desc=config.architecture, unit="batch", disable=not config.progress_bar)
    loop = _Loop(prep, config, hp, device, optimizer, schedule, rng, total_steps, bar, on_progress)
    for epoch in range(1, hp["epochs"] + 1):
        seen, loss_sum, correct = _train_epoch(loop, epoch, lengths)
        val = evaluate(prep.model, prep.x_val, prep.y_val, device)
        history.append(
            {
                "epoch": epoch,
                "train_loss": loss_sum / seen,
                "train_accuracy": correct / seen,
                "val_loss": val["loss"],
                "val_accuracy": val["accuracy"],
            }
        )
        bar.set_postfix(
            epoch=epoch,
            loss=f"{loss_sum / seen:.4f}",
            val_loss=f"{val['loss']:.4f}",
            val_acc=f"{val['accuracy']:.3f}",
        )
        if on_progress:
            on_progress(min(loop.step / total_steps, 1.0), {**history[-1], "step": loop.step})
        if stopping.should_stop(val["loss"] if val["n"] else loss_sum / seen, epoch, prep.model):
            break
    bar.close()
    seconds = time.perf_counter() - started
    stopping.restore_best(prep.model)
    return history, stopping.best_epoch, seconds


def _metrics(
    prep: _Prepared,
    config: TrainConfig,
    device: torch.device,
    history: list[dict],
    best_epoch: int,
    seconds: float,
) -> dict:
    """The run's metrics: sizes, epochs, speed, the best model's validation and test figures, the history."""
    n_train = len(prep.x_train)
    return {
        "architecture": config.architecture,
        "device": str(device),
        "seed": config.seed,
        "labels": prep.labels,
        "n_train": n_train,
        "n_validation": len(prep.x_val),
        "n_test": len(prep.x_test),
        "epochs_run": len(history),
        "best_epoch": best_epoch,
        "train_seconds": seconds,
        "train_examples_per_second": n_train * len(history) / seconds if seconds > 0 else float("nan"),
        "validation": evaluate(prep.model, prep.x_val, prep.y_val, device),
        "test": evaluate(prep.model, prep.x_test, prep.y_test, device),
        "history": history,
    }


def _save_splits(out_dir: str | Path, splits: tuple[list[dict], list[dict], list[dict]]) -> None:
    """``splits.json``: the record ids of the train, validation and test splits."""
    names = ("train", "validation", "test")
    (Path(out_dir) / "splits.json").write_text(
        json.dumps({name: [rec["id"] for rec in recs] for name, recs in zip(names, splits, strict=True)}),
        encoding="utf-8",
    )


def train(
    records: Sequence[dict],
    config: TrainConfig | None = None,
    out_dir: str | Path | None = None,
    on_progress: ProgressCallback | None = None,
) -> TrainedModel:
    """Train ``config.architecture`` on ``records``; return (and, given ``out_dir``, save) the bundle.

    ``on_progress(fraction, info)`` is called after every batch (``info``: epoch, step, running
    loss and accuracy) and after every epoch (adding validation loss and accuracy); the last call
    has fraction 1.0 and the test metrics.
    """
    config = config or TrainConfig()
    hp = config.resolved()
    device = pick_device(config.device)
    prep = _prepare(records, config, hp, device)
    history, best_epoch, seconds = _fit(prep, config, hp, device, on_progress)
    metrics = _metrics(prep, config, device, history, best_epoch, seconds)
    bundle_config = {
        "train": config.to_dict(),
        "hyperparameters": hp,
        "seed": config.seed,
        "max_len": hp["max_len"],
    }
    bundle = TrainedModel(prep.model, prep.vocab, prep.labels, bundle_config, metrics, device)
    if out_dir is not None:
        bundle.save(out_dir)
        _save_splits(out_dir, prep.splits)
    if on_progress:
        on_progress(1.0, {"phase": "done", "test": metrics["test"], "epochs_run": len(history)})
    return bundle
