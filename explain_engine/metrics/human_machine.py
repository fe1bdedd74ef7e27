"""Sen et al. (2020)'s human-vs-machine comparison (Tables 2–4) against every human reference in one pass.

For each reference — annotator slots HAM1, HAM2, …, the consensus map CAM and the super map SAM —
:func:`compare_to_humans` gives k, behavioral similarity, lexical similarity with its random
baseline and the adjusted LS, and (given word polarities) CSSR of the human and of the machine.

The references are different maps over the same texts, so the per-text sorts are done once and
shared: the machine's average ranks (for every AUC), its descending ranks (for every top-k), and one
random ranking per random draw (for every LS(R, H)).
"""

from __future__ import annotations

import numpy as np

from explain_engine.metrics.behavioral import HumanMaps, average_k, average_ranks, behavioral_similarity
from explain_engine.metrics.bootstrap import LEVEL, N_BOOT
from explain_engine.metrics.cssr import cssr
from explain_engine.metrics.lexical import (
    adjusted_lexical_similarity,
    lexical_similarity,
    machine_selection,
    random_lexical_similarity,
    tag_distribution_table,
)
from explain_engine.metrics.ragged import Ragged, descending_ranks, random_ranks


def compare_to_humans(
    humans: HumanMaps,
    machine: Ragged,
    tags: Ragged | None = None,
    polarity: Ragged | None = None,
    select: str = "top_k",
    draws: int = 10,
    min_maps: int = 2,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> dict:
    """Rows of Sen et al. 2020 Tables 2–4 for a machine map per text of ``humans`` (same order).

    ``tags``: Penn tag codes per word (:func:`~explain_engine.metrics.lexical.encode_tags`), for
    lexical similarity and the tag table; ``polarity``: lexicon flags per word
    (:func:`~explain_engine.metrics.cssr.polarity_codes`), for CSSR. Returns
    ``{"references": [row, ...], "tag_distribution": Table 5 rows (CAM vs machine) or None}``.
    """
    if len(machine) != len(humans) or not np.array_equal(machine.lengths, humans.lengths):
        raise ValueError("the machine maps must follow the texts of the human maps, one score per word")
    avg_ranks = average_ranks(machine)
    desc_ranks = descending_ranks(machine) if select == "top_k" else None
    shuffles = None
    if tags is not None and draws > 0:
        rng = np.random.default_rng(seed)
        shuffles = [random_ranks(humans.lengths, rng) for _ in range(draws)]
    rows = []
    table5 = None
    for name, (idx, maps) in humans.references(min_maps=min_maps).items():
        m = machine.take(idx)
        ranks = desc_ranks.take(idx) if desc_ranks is not None else None
        row: dict = {
            "reference": name,
            "texts": int(len(idx)),
            "k": average_k(maps, n_boot, seed).to_dict(),
            "behavioral": behavioral_similarity(maps, m, n_boot, level, seed, avg_ranks.take(idx)).to_dict(),
        }
        selected = machine_selection(maps, m, select, ranks)
        if tags is not None:
            t = tags.take(idx)
            ls = lexical_similarity(t, maps, m, select, n_boot, level, seed, ranks)
            row["lexical"] = ls.to_dict()
            if shuffles is not None:
                ls_r = random_lexical_similarity(t, maps, random_ranks=[r.take(idx) for r in shuffles])
                row["lexical_random"] = ls_r.to_dict()
                row["lexical_adjusted"] = adjusted_lexical_similarity(ls.value, ls_r.value)
            if name == "CAM":
                table5 = tag_distribution_table(t, maps, selected)
        if polarity is not None:
            pol = polarity.take(idx)
            labels = humans.labels[idx]
            row["cssr_human"] = {
                k: v.to_dict() for k, v in cssr(pol, maps, labels, n_boot, level, seed).items()
            }
            row["cssr_machine"] = {
                k: v.to_dict() for k, v in cssr(pol, selected, labels, n_boot, level, seed).items()
            }
        rows.append(row)
    return {"references": rows, "tag_distribution": table5}
