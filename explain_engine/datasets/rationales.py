"""Human relevance ground truth for the manual pointing game (Poerner et al. 2018 §4.1).

* Movie reviews with annotator rationales (Zaidan et al. 2007): ``movie_rationales.jsonl``, one
  review per line with ``rationale_spans`` as ``[start, end)`` offsets into ``text.split(" ")``.
  The relevant words of a review are the words inside its spans.
* 20 Newsgroups human attention (Mohseni & Ragan 2018), the sci.med / sci.electronics articles
  Poerner et al. 2018 evaluates on: ``human_attention_subset.jsonl`` gives, per article, the lower-case word
  *types* annotators marked (weights 1.0 / 0.5). The article texts are the 20news-bydate test
  documents, not shipped with the annotations: pass ``texts_dir`` (the ``20news-bydate-test``
  folder) to attach them; a word of the text is relevant when one of its model tokens is a marked
  type.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from explain_engine.text import model_tokens, word_spans


def read_movie_rationales(path: str | Path, annotated_only: bool = True) -> list[dict]:
    """Records ``{id, text, label, words, relevant}`` (``relevant``: sorted word indices).

    ``annotated_only`` keeps the reviews that have at least one rationale span.
    """
    records = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                text, label, spans = row["text"], row["label"], row.get("rationale_spans", [])
            except (json.JSONDecodeError, KeyError) as exc:
                raise ValueError(f"{path}:{lineno}: not a movie-rationale record ({exc})") from None
            words = word_spans(text)
            relevant = sorted({i for start, end in spans for i in range(int(start), int(end))})
            if relevant and relevant[-1] >= len(words):
                raise ValueError(f"{path}:{lineno}: a rationale span runs past the {len(words)} words")
            if annotated_only and not relevant:
                continue
            records.append(
                {
                    "id": row.get("id", f"line-{lineno}"),
                    "text": text,
                    "label": label,
                    "words": [list(s) for s in words],
                    "relevant": relevant,
                }
            )
    return records


def relevant_by_type(text: str, types: Iterable[str]) -> list[int]:
    """Indices of the words of ``text`` that have a model token among the lower-case ``types``."""
    wanted = {t.lower() for t in types}
    tokens, _, owner = model_tokens(text, word_spans(text))
    return sorted({w for tok, w in zip(tokens, owner, strict=True) if tok in wanted})


def read_mohseni(
    path: str | Path, texts_dir: str | Path | None = None, min_weight: float = 0.5
) -> list[dict]:
    """Records ``{id, category, label, types, text, relevant}`` of the 20 Newsgroups annotations.

    ``types`` maps each marked word type to its weight (kept when ≥ ``min_weight``). ``text`` and
    ``relevant`` are None unless ``texts_dir`` holds ``<category>/<article>``.
    """
    records = []
    missing: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                category, article = row["category"], str(row["article"])
                types = {str(w).lower(): float(x) for w, x in row["words"] if float(x) >= min_weight}
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"{path}:{lineno}: not a 20-newsgroups attention record ({exc})") from None
            text = None
            if texts_dir is not None:
                file = Path(texts_dir) / category / article
                if not file.exists():
                    missing.append(f"{category}/{article}")
                    continue
                text = file.read_text(encoding="latin-1")
            records.append(
                {
                    "id": f"{category}/{article}",
                    "category": category,
                    "label": category,
                    "types": types,
                    "text": text,
                    "relevant": None if text is None else relevant_by_type(text, types),
                }
            )
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise FileNotFoundError(
            f"{texts_dir}: {len(missing)} of the {len(missing) + len(records)} annotated 20news-bydate "
            f"test articles are missing (<category>/<article>): {shown}"
        )
    return records


def type_hit(word: str, types: Mapping[str, float] | Iterable[str]) -> bool:
    """Whether a word (as written in a text) is one of the marked types."""
    wanted = {t.lower() for t in types}
    return any(tok in wanted for tok in model_tokens(word, [(0, len(word))])[0])


def rationale_explanations(path: str | Path, max_words: int | None = None) -> list[dict]:
    """Movie reviews with their rationale snippets standing in for a written explanation (Prasad et al.
    2021's soft oracle needs an input and an explanation of it; the Zaidan et al. 2007 rationales are
    spans of the review itself, not free text, so the "explanation" here is the review's rationale
    snippets joined by " ; "). Records ``{id, text, label, explanation}``; ``max_words`` keeps the first
    words of each review and the snippets within them. Reviews without a snippet left are dropped."""
    out = []
    for rec in read_movie_rationales(path, annotated_only=True):
        words = rec["text"].split(" ")
        keep = len(words) if max_words is None else min(max_words, len(words))
        relevant = [i for i in rec["relevant"] if i < keep]
        if not relevant:
            continue
        snippets, current = [], [relevant[0]]
        for i in relevant[1:]:
            if i == current[-1] + 1:
                current.append(i)
            else:
                snippets.append(current)
                current = [i]
        snippets.append(current)
        out.append(
            {
                "id": rec["id"],
                "text": " ".join(words[:keep]),
                "label": rec["label"],
                "explanation": " ; ".join(" ".join(words[i] for i in s) for s in snippets),
            }
        )
    return out
