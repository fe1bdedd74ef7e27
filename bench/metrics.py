"""Benchmark: Sen et al. 2020's metrics over YELP-HAT-sized data (5,000 reviews × 3 maps = 15,000 maps).

Data: the raw YELP-HAT reviews that have ≥ 3 maps (first 3 maps each), repeated until there are
5,000 reviews (synthetic reviews when ../shared/data is absent); machine maps are seeded random
scores that lean towards the words humans chose.

Timed:
* one-off preparation per document, counted apart: reading the records into flat arrays, POS
  tagging (TextBlob's PatternTagger; its lexicon load is reported separately) and lexicon lookups;
* "all paper-000 metrics": k per slot, CAM and SAM, human–human behavioral similarity (6 slot
  pairs), human–machine behavioral similarity, lexical similarity with its random baseline
  (10 draws) and adjusted LS, and CSSR for HAM1–3 / CAM / SAM, plus Fleiss κ of the labels —
  without intervals and with 1,000-resample bootstrap intervals;
* behavioral similarity, lexical similarity and Fleiss κ each against a straightforward per-text
  loop (scikit-learn's ``roc_auc_score`` per map, Python counting per text, statsmodels per item),
  checking both give the same number.

Usage: ``python bench/metrics.py [--reviews 5000] [--repeat 3]``. Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explain_engine.datasets.yelphat import LABEL_CATEGORIES, read_raw  # noqa: E402
from explain_engine.lexicon import load_opinion_lexicon  # noqa: E402
from explain_engine.metrics.agreement import fleiss_kappa  # noqa: E402
from explain_engine.metrics.behavioral import HumanMaps, behavioral_similarity, human_human_similarity  # noqa: E402
from explain_engine.metrics.cssr import polarity_codes  # noqa: E402
from explain_engine.metrics.human_machine import compare_to_humans  # noqa: E402
from explain_engine.metrics.lexical import encode_tags, lexical_similarity  # noqa: E402
from explain_engine.metrics.pos import TAGSET, tag_documents, tag_words  # noqa: E402
from explain_engine.metrics.ragged import Ragged  # noqa: E402
from explain_engine.text import word_spans, words_of  # noqa: E402

SHARED = (ROOT.parent / "shared" / "data").resolve()


def build_records(n_reviews: int, seed: int = 0) -> tuple[list[dict], str]:
    raw = SHARED / "yelp-hat" / "raw"
    rng = np.random.default_rng(seed)
    if raw.exists():
        base = [r for r in read_raw(sorted(raw.glob("*.csv"))) if len(r["annotations"]) >= 3]
        source = f"raw YELP-HAT ({len(base)} reviews with ≥ 3 maps, repeated)"
    else:
        vocab = [
            "good",
            "bad",
            "food",
            "service",
            "great",
            "place",
            "never",
            "again",
            "amazing",
            "slow",
            "the",
            "a",
            "was",
            "and",
        ]
        base = []
        for i in range(500):
            text = " ".join(rng.choice(vocab, int(rng.integers(50, 200))))
            n = len(text.split())
            anns = [
                {"label": "positive", "map": (rng.random(n) < 0.15).astype(int).tolist()} for _ in range(3)
            ]
            base.append(
                {"id": f"s:{i}", "text": text, "words": word_spans(text), "label": i % 2, "annotations": anns}
            )
        source = "synthetic (shared data absent)"
    records = []
    for i in range(n_reviews):
        r = base[i % len(base)]
        records.append({**r, "id": f"{r['id']}#{i}", "annotations": r["annotations"][:3]})
    return records, source


def machine_maps(humans: HumanMaps, seed: int = 1) -> Ragged:
    rng = np.random.default_rng(seed)
    share = humans.word_sums() / np.repeat(humans.maps_per_text, humans.lengths)
    scores = np.exp(2.0 * share + rng.normal(0.0, 1.0, share.shape[0]))
    return Ragged(scores, humans.lengths)


def all_paper000_metrics(humans, machine, tags, polarity, labels_table, n_boot: int) -> dict:
    """Tables 2–4 against HAM1–3 / CAM / SAM, human–human similarity and Fleiss κ of the labels."""
    out = compare_to_humans(humans, machine, tags, polarity, draws=10, n_boot=n_boot)
    out["human_human"] = {
        (r["truth"], r["score"]): r["value"] for r in human_human_similarity(humans, n_boot)
    }
    out["fleiss"] = fleiss_kappa(labels_table, LABEL_CATEGORIES, n_boot).value
    return out


def timed(fn, repeat: int = 1):
    """Best wall-clock and CPU seconds over ``repeat`` runs, and the result."""
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return (wall, cpu), result


def loop_behavioral(humans: HumanMaps, machine: Ragged) -> float:
    from sklearn.metrics import roc_auc_score

    maps = humans.maps.to_lists()
    scores = machine.to_lists()
    aucs = [
        roc_auc_score(m, scores[r])
        for m, r in zip(maps, humans.review.tolist(), strict=True)
        if 0 < sum(m) < len(m)
    ]
    return float(np.mean(aucs))


def loop_lexical(humans: HumanMaps, machine: Ragged, tag_lists: list[list[str]]) -> float:
    from scipy.stats import pearsonr

    human_words, machine_words = Counter(), Counter()
    scores = machine.to_lists()
    for m, r in zip(humans.maps.to_lists(), humans.review.tolist(), strict=True):
        tags, s = tag_lists[r], scores[r]
        human_words.update(t for t, h in zip(tags, m, strict=True) if h)
        top = sorted(range(len(s)), key=lambda j: (-s[j], j))[: sum(m)]
        machine_words.update(tags[j] for j in top)
    h = np.array([human_words[t] for t in TAGSET], float)
    mm = np.array([machine_words[t] for t in TAGSET], float)
    return float(pearsonr(h / h.sum(), mm / mm.sum()).statistic)


def loop_fleiss(labels_table: list[list]) -> float:
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rows = []
    for answers in labels_table:
        given = [a for a in answers if a is not None]
        if len(given) == 3:
            rows.append([given.count(c) for c in LABEL_CATEGORIES])
    return float(sm_fleiss(np.array(rows)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    records, source = build_records(args.reviews)
    t_read, humans = timed(lambda: HumanMaps.from_records(records))
    machine = machine_maps(humans)
    t_load, _ = timed(lambda: tag_words("The tagger loads its lexicon once."))
    t_tag, tag_lists = timed(
        lambda: tag_documents([r["text"] for r in records], [r["words"] for r in records])
    )
    tags = encode_tags(tag_lists)
    lex_dir = SHARED / "opinion-lexicon-hu-liu"
    if lex_dir.exists():
        lexicon = load_opinion_lexicon(lex_dir)
        words = [words_of(r["text"], r["words"]) for r in records]
        t_pol, polarity = timed(lambda: polarity_codes(words, lexicon))
    else:
        t_pol, polarity = (0.0, 0.0), Ragged(np.zeros(int(humans.lengths.sum()), np.int8), humans.lengths)
    table = humans.annotation_table()
    labels_table = [[humans.answers[a] for a in row if a >= 0] for row in table]

    # only answers where the three labels are all given, so that the loop baseline (statsmodels) applies
    complete = [row for row in labels_table if None not in row]

    t_all, res = timed(
        lambda: all_paper000_metrics(humans, machine, tags, polarity, complete, 0), args.repeat
    )
    t_all_ci, _ = timed(lambda: all_paper000_metrics(humans, machine, tags, polarity, complete, 1000), 1)

    every = Ragged(machine.take(humans.review).values, humans.maps.lengths)
    tag_every = tags.take(humans.review)
    t_bs, bs = timed(lambda: behavioral_similarity(humans.maps, every, n_boot=0).value, args.repeat)
    t_bs_loop, bs_loop = timed(lambda: loop_behavioral(humans, machine))
    t_ls, ls = timed(lambda: lexical_similarity(tag_every, humans.maps, every, n_boot=0).value, args.repeat)
    t_ls_loop, ls_loop = timed(lambda: loop_lexical(humans, machine, tag_lists))
    t_fk, fk = timed(lambda: fleiss_kappa(complete, LABEL_CATEGORIES, n_boot=0).value, args.repeat)
    t_fk_loop, fk_loop = timed(lambda: loop_fleiss(complete))
    assert abs(bs - bs_loop) < 1e-9 and abs(ls - ls_loop) < 1e-9 and abs(fk - fk_loop) < 1e-9

    n_maps = int(humans.maps_per_text.sum())
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"data: {source}; {len(humans)} reviews, {n_maps} maps, {int(humans.maps.lengths.sum())} map cells")
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f} (other work shares the machine)")
    print("times: wall-clock and CPU seconds of this process (best of --repeat for the vectorised code)")
    print()
    print("one-off preparation per document (cacheable; not in the metric timings)   wall      cpu")
    for name, (w, c) in (
        ("records -> flat arrays", t_read),
        ("POS tagger lexicon load", t_load),
        (f"POS tagging, {len(records)} documents", t_tag),
        ("lexicon lookups", t_pol),
    ):
        print(f"  {name:<70}{w:7.3f}s {c:7.3f}s")
    print()
    head = f"metric over {n_maps} maps"
    print(f"{head:<46}{'vectorised wall/cpu':>22}{'per-text loop wall/cpu':>26}{'cpu speed-up':>14}")
    for name, fast, slow in (
        ("behavioral similarity (every map vs machine)", t_bs, t_bs_loop),
        ("lexical similarity (every map vs machine)", t_ls, t_ls_loop),
        ("Fleiss κ of the labels", t_fk, t_fk_loop),
    ):
        print(
            f"{name:<46}{fast[0]:10.4f}s {fast[1]:9.4f}s{slow[0]:13.3f}s {slow[1]:10.3f}s{slow[1] / fast[1]:12.0f}×"
        )
    print(f"{'all paper-000 metrics, no intervals':<46}{t_all[0]:10.3f}s {t_all[1]:9.3f}s")
    print(f"{'all paper-000 metrics, 1000-resample CIs':<46}{t_all_ci[0]:10.3f}s {t_all_ci[1]:9.3f}s")
    print()
    print(
        "values:", json.dumps({"behavioral": round(bs, 4), "lexical": round(ls, 4), "fleiss": round(fk, 4)})
    )
    print(
        "  human–human (truth<-score):",
        {f"{t}<-{s}": round(v, 3) for (t, s), v in res["human_human"].items()},
    )
    summary = {
        "bench": "metrics",
        "maps": n_maps,
        "reviews": len(humans),
        "all_metrics_wall_s": round(t_all[0], 4),
        "all_metrics_cpu_s": round(t_all[1], 4),
        "all_metrics_with_ci_wall_s": round(t_all_ci[0], 4),
        "all_metrics_with_ci_cpu_s": round(t_all_ci[1], 4),
        "target_s": 2.0,
        "within_target_wall": t_all[0] < 2.0,
        "within_target_cpu": t_all[1] < 2.0,
        "behavioral_cpu_s": round(t_bs[1], 4),
        "behavioral_loop_cpu_s": round(t_bs_loop[1], 3),
        "lexical_cpu_s": round(t_ls[1], 4),
        "lexical_loop_cpu_s": round(t_ls_loop[1], 3),
        "fleiss_cpu_s": round(t_fk[1], 4),
        "fleiss_loop_cpu_s": round(t_fk_loop[1], 3),
        "pos_tagging_cpu_s": round(t_tag[1], 3),
        "pos_lexicon_load_cpu_s": round(t_load[1], 3),
        "lexicon_lookup_cpu_s": round(t_pol[1], 3),
        "load_average": round(load, 2),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
