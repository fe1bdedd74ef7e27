"""``python -m explain_engine redundancy-replay RAW.csv [...] [--seeds 5] [--simulate 5 9] [--plot out.png]``.

Replays the real YELP-HAT answers (three labels and maps per review, Sen et al. 2020) in a random order
per review under each stopping rule and threshold of adaptive redundancy (:mod:`explain_engine.replay`),
and prints, per policy, the answers it used against the fixed design of three, and the change in each
published figure: the label majority, human accuracy, CAM and SAM k, the human–human AUC. With
``--simulate``, simulated annotators fitted to the real answers extend the replay to larger maxima (the
fixed design then has that many answers). ``--plot`` draws answers used against the change in the
figures (PNG or SVG by the file's extension).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from explain_engine.datasets.yelphat import read_maps_jsonl, read_raw
from explain_engine.redundancy import StoppingPolicy
from explain_engine.replay import FIGURES, ReplayRow, crowd_accuracy, replay_table, simulate

CATEGORIES = ("positive", "negative", "cannot decide")
SHORT = {
    "majority_same": "maj=",
    "accuracy_pooled": "Δacc",
    "accuracy_majority": "Δacc_maj",
    "cam_k": "ΔCAM k",
    "sam_k": "ΔSAM k",
    "hh_auc": "ΔHH AUC",
}


def policies(maximum: int) -> list[StoppingPolicy]:
    """The rules and thresholds replayed up to ``maximum`` answers per text."""
    k = len(CATEGORIES)
    grid = [("label_share", 2, t) for t in (0.6, 0.75, 0.9)]
    grid += [("label_posterior", 1, t) for t in (0.9, 0.97, 0.99, 0.999)]
    grid += [("map_agreement", 2, t) for t in (0.3, 0.4, 0.5, 0.6)]
    grid += [("ci_width", 2, t) for t in (0.7, 0.6, 0.5)]
    return [StoppingPolicy(lo, maximum, rule, t, categories=k) for rule, lo, t in grid if lo <= maximum]


def format_table(title: str, base: dict[str, float], rows: Sequence[ReplayRow]) -> str:
    """The replay as a text table: the fixed design's figures, then one line per policy."""
    head = f"{'rule':<16}{'thr':>6}{'min-max':>8}{'answers':>9}{'saved':>7}{'stop@rule':>10}"
    head += "".join(f"{SHORT[k]:>10}" for k in SHORT)
    fixed = (
        f"{'fixed':<16}{'':>6}{rows[0].fixed_n if rows else '':>8}{base['answers']:>9.3f}{0:>7.1%}{'':>10}"
    )
    fixed += f"{base['majority_same']:>10.3f}" + "".join(f"{base[k]:>10.3f}" for k in list(SHORT)[1:])
    lines = [title, head, fixed]
    for r in rows:
        line = f"{r.rule:<16}{r.threshold:>6g}{f'{r.minimum}-{r.maximum}':>8}{r.figures['answers']:>9.3f}"
        line += f"{r.saved:>7.1%}{r.stops['rule']:>10.1%}{r.figures['majority_same']:>10.3f}"
        line += "".join(f"{r.change[k]:>+10.4f}" for k in list(SHORT)[1:])
        lines.append(line)
    return "\n".join(lines)


def as_dict(title: str, base: dict[str, float], rows: Sequence[ReplayRow]) -> dict:
    return {
        "design": title,
        "fixed": base,
        "policies": [
            {
                "rule": r.rule,
                "threshold": r.threshold,
                "min": r.minimum,
                "max": r.maximum,
                "fixed_n": r.fixed_n,
                "saved": r.saved,
                "stopped_by_rule": r.stops["rule"],
                "figures": r.figures,
                "change": r.change,
            }
            for r in rows
        ],
    }


def plot(results: list[dict], path: str) -> None:
    """Answers saved against the error in the label majority, the human–human AUC and CAM k: one point per
    policy, a colour per design, a marker per rule."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    panels = (
        ("majority_same", "majority label differs from fixed N (share of texts)", lambda v: 1.0 - v),
        ("hh_auc", "|Δ human-human AUC|", abs),
        ("cam_k", "|Δ CAM k| (words)", abs),
    )
    markers = {"label_share": "o", "label_posterior": "s", "map_agreement": "^", "ci_width": "D"}
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (key, label, error) in zip(axes, panels, strict=True):
        for colour, result in zip(colours, results, strict=False):
            for rule, marker in markers.items():
                chosen = [p for p in result["policies"] if p["rule"] == rule]
                xs = [p["saved"] for p in chosen]
                ys = [
                    error(p["figures"][key] if key == "majority_same" else p["change"][key]) for p in chosen
                ]
                ax.scatter(xs, ys, label=f"{result['design']}: {rule}", s=24, color=colour, marker=marker)
        ax.set_xlabel("answers saved against fixed N")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=6, ncol=2)
    fig.suptitle("Adaptive redundancy on YELP-HAT: cost against error")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _run(args: argparse.Namespace) -> int:
    records = read_maps_jsonl(args.maps) if args.maps else read_raw(args.raw)
    seeds = list(range(args.seeds))
    real = [r for r in records if len(r["annotations"]) >= 3]
    accuracy = crowd_accuracy(real, CATEGORIES)
    results = []
    title = f"YELP-HAT real answers, fixed N=3, {len(real)} texts, {len(seeds)} orders (crowd accuracy {accuracy:.3f})"
    base, rows = replay_table(real, policies(3), 3, seeds, accuracy)
    results.append(as_dict("real, max 3", base, rows))
    text = [format_table(title, base, rows)]
    for maximum in args.simulate:
        simulated = simulate(real, maximum, seed=args.seed)
        title = f"Simulated annotators fitted to YELP-HAT, fixed N={maximum}, {len(real)} texts"
        base, rows = replay_table(simulated, policies(maximum), maximum, seeds)
        results.append(as_dict(f"simulated, max {maximum}", base, rows))
        text.append(format_table(title, base, rows))
    if args.plot:
        plot(results, args.plot)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print("\n\n".join(text))
        print("\nFigures: " + "; ".join(f"{k}: {v}" for k, v in FIGURES.items()))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "redundancy-replay", help="replay YELP-HAT answers under adaptive redundancy", description=__doc__
    )
    parser.add_argument("raw", nargs="*", help="raw YELP-HAT CSV file(s)")
    parser.add_argument("--maps", help="JSON lines written by 'yelphat convert' (instead of raw files)")
    parser.add_argument("--seeds", type=int, default=5, help="random answer orders per policy (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated annotators")
    parser.add_argument(
        "--simulate",
        type=int,
        nargs="*",
        default=[],
        help="maxima to replay with simulated annotators, e.g. 5 9",
    )
    parser.add_argument("--plot", help="write a cost-against-error plot here (.png or .svg)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(func=_run)
