"""Explanation methods in words: a readable name for each registered method code (``grad_dot_int_s``,
``limsse_ms_p``, ``omit_7``) and its one-line description from the explainer registry.

The codes follow Poerner et al. (2018, §3): ``grad_{l2|dot}_{1|int_}{s|p}`` is the simple (1) or
integrated (int) gradient of the score s or the probability p, reduced by its L2 norm or a dot product
with the embedding; ``occ_n`` / ``omit_n`` occlude or omit n-grams; ``limsse_*`` are the LIMSSE losses.
"""

from __future__ import annotations

import re

from explain_engine.api import METHODS

ATTENTION_TRAINING = "attention (training)"
_GRADIENT = re.compile(r"grad_(l2|dot)_(1|int_)([sp])")
_NGRAM = re.compile(r"(occ|omit)_(\d+)")
NAMES = {
    "attention": "Attention weights",
    "attention_last": "Last layer's attention",
    "attention_rollout": "Attention rollout",
    ATTENTION_TRAINING: "Attention (as trained)",
    "cell_decomposition": "Cell decomposition",
    "decision_tree": "Decision-tree extraction",
    "deeplift": "DeepLIFT",
    "gradcam": "Grad-CAM-Text",
    "lime": "LIME",
    "limsse_bb": "LIMSSE, black-box loss",
    "limsse_ms_p": "LIMSSE, magnitude-sensitive on p",
    "limsse_ms_s": "LIMSSE, magnitude-sensitive on s",
    "lrp": "ε-LRP",
    "random": "Random scores",
    "random_ngram": "Random n-gram scores",
    "rationale": "Rationale selection",
}
DESCRIPTIONS = {ATTENTION_TRAINING: "The model's own attention weights, stored when it was trained."}


def method_name(code: str) -> str:
    """The readable name of the method ``code``; an unknown code is shown as it is."""
    if code in NAMES:
        return NAMES[code]
    if match := _GRADIENT.fullmatch(code):
        reduce, kind, target = match.groups()
        simple = "Simple gradient" if kind == "1" else "Integrated gradients"
        return f"{simple} of {target}, {'L2 norm' if reduce == 'l2' else 'dot product'}"
    if match := _NGRAM.fullmatch(code):
        verb, n = match.groups()
        return f"{'Occlusion' if verb == 'occ' else 'Omission'} of {n}-grams"
    return code


def method_description(code: str) -> str:
    """The registry's one-line description of ``code`` (empty for a code the registry does not hold)."""
    if code in DESCRIPTIONS:
        return DESCRIPTIONS[code]
    return METHODS[code].doc if code in METHODS else ""
