"""Synthetic subject–verb agreement sentences for the morphosyntactic agreement paradigm (Poerner et al. 2018 §2.2, §4.2).

Poerner et al. 2018 use Linzen et al. 2016's automatically annotated English Wikipedia sentences. These
sentences are **synthetic**, generated from a small grammar, not that corpus: a subject noun phrase,
then one to ``max_modifiers`` modifiers that put *attractor* nouns of the other number between the
subject and its verb, and the verb whose number is to be predicted:

* prepositional phrases: "the keys **to the cabinet** [are ...]";
* object relative clauses, whose own verb agrees with the attractor: "the author **that the
  editors like** [is ...]";
* optionally a sentence-initial adverbial ("yesterday ,"), so that the subject is not always the
  first word.

Determiners and adjectives do not mark number, so the subject noun is the only word that tells the
verb's number (the relative-clause verbs and attractors tell the opposite).

As in the paper, a sample is every word *before* the verb: ``text``; ``label`` is the verb's number
(``Sg``/``Pl``, the subject's number); ``target`` the subject's word index; ``features`` the number of
every word (``Sg`` for a singular noun or a VBZ verb, ``Pl`` for a plural noun or a VBP verb, None
otherwise, the paper's feat(X, t)); ``attractors`` the words of the other number; ``verb`` the verb
form that follows. Half the modifiers' nouns (``attractor_rate``) are attractors, so that neither the
last word nor the nearest noun gives the verb's number away: only the subject does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SINGULAR, PLURAL = "Sg", "Pl"

#: (singular, plural) nouns; subjects and attractors are drawn from the same list.
NOUNS: tuple[tuple[str, str], ...] = (
    ("author", "authors"),
    ("editor", "editors"),
    ("key", "keys"),
    ("cabinet", "cabinets"),
    ("child", "children"),
    ("teacher", "teachers"),
    ("manager", "managers"),
    ("dog", "dogs"),
    ("painting", "paintings"),
    ("student", "students"),
    ("building", "buildings"),
    ("doctor", "doctors"),
    ("senator", "senators"),
    ("picture", "pictures"),
    ("farmer", "farmers"),
    ("letter", "letters"),
)
ADJECTIVES = ("old", "new", "small", "famous", "quiet", "young", "red", "local")
PREPOSITIONS = ("near", "with", "behind", "of", "for", "beside", "from", "to")
#: Determiners that do not mark number ("a", "this", "these" would), so that the noun is the only cue.
DETERMINERS = ("the", "the", "my", "our", "his", "her")
#: (VBZ, VBP) transitive verbs of the relative clauses.
CLAUSE_VERBS: tuple[tuple[str, str], ...] = (
    ("likes", "like"),
    ("sees", "see"),
    ("admires", "admire"),
    ("knows", "know"),
    ("visits", "visit"),
)
ADVERBIALS = ("yesterday ,", "in the end ,", "as expected ,", "today ,")
#: (VBZ, VBP) forms of the verb that follows the sample.
MAIN_VERBS: tuple[tuple[str, str], ...] = (("is", "are"), ("was", "were"), ("has", "have"), ("seems", "seem"))


def _other(number: str) -> str:
    return PLURAL if number == SINGULAR else SINGULAR


def _noun_phrase(rng: np.random.Generator, number: str) -> tuple[list[str], int]:
    """Words of a noun phrase of ``number`` and the index of its head noun within them."""
    words = [str(rng.choice(DETERMINERS))]
    if rng.random() < 0.3:
        words.append(str(rng.choice(ADJECTIVES)))
    noun = NOUNS[int(rng.integers(len(NOUNS)))]
    words.append(noun[0] if number == SINGULAR else noun[1])
    return words, len(words) - 1


def agreement_sentence(
    rng: np.random.Generator, max_modifiers: int = 3, adverbial_rate: float = 0.2, attractor_rate: float = 0.5
) -> dict:
    """One sample: ``text`` (the words before the verb), ``label``, ``target``, ``features``,
    ``attractors`` (word indices of the nouns and verbs of the other number) and ``verb``.

    Each modifier's noun is an attractor (the other number) with probability ``attractor_rate``, else
    of the subject's number; at 0.5 the number of the noun nearest the verb says nothing about the
    label, so only the subject does.
    """
    number = SINGULAR if rng.random() < 0.5 else PLURAL
    words: list[str] = []
    features: list[str | None] = []
    if rng.random() < adverbial_rate:
        adverbial = str(rng.choice(ADVERBIALS)).split()
        words += adverbial
        features += [None] * len(adverbial)
    np_words, head = _noun_phrase(rng, number)
    target = len(words) + head
    words += np_words
    features += [number if i == head else None for i in range(len(np_words))]
    for _ in range(int(rng.integers(1, max_modifiers + 1))):
        inner = _other(number) if rng.random() < attractor_rate else number
        np_words, head = _noun_phrase(rng, inner)
        if rng.random() < 0.6:  # prepositional phrase: "near the cabinets"
            words.append(str(rng.choice(PREPOSITIONS)))
            features.append(None)
            words += np_words
            features += [inner if i == head else None for i in range(len(np_words))]
        else:  # object relative clause: "that the editors like"
            verb = CLAUSE_VERBS[int(rng.integers(len(CLAUSE_VERBS)))]
            words.append("that")
            features.append(None)
            words += np_words
            features += [inner if i == head else None for i in range(len(np_words))]
            words.append(verb[0] if inner == SINGULAR else verb[1])
            features.append(inner)
    main = MAIN_VERBS[int(rng.integers(len(MAIN_VERBS)))]
    return {
        "text": " ".join(words),
        "label": number,
        "target": target,
        "features": features,
        "attractors": [i for i, f in enumerate(features) if f is not None and f != number],
        "verb": main[0] if number == SINGULAR else main[1],
    }


def agreement_corpus(
    n: int,
    seed: int = 0,
    max_modifiers: int = 3,
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    attractor_rate: float = 0.5,
) -> list[dict]:
    """``n`` distinct samples with ids and a ``split`` field (train / validation / test by ``fractions``).

    Duplicated sentences are drawn again, so that no test sentence is also a training sentence.
    """
    if n < 1:
        raise ValueError("n must be positive")
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    out: list[dict] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 50 * n:
            raise ValueError(f"the grammar yields fewer than {n} distinct sentences; ask for fewer")
        sample = agreement_sentence(rng, max_modifiers, attractor_rate=attractor_rate)
        if sample["text"] in seen:
            continue
        seen.add(sample["text"])
        out.append({"id": f"agr-{seed}-{len(out)}", **sample})
    cuts = np.cumsum(np.asarray(fractions, dtype=np.float64) / np.sum(fractions)) * n
    for i, rec in enumerate(out):
        rec["split"] = "train" if i < round(cuts[0]) else "validation" if i < round(cuts[1]) else "test"
    return out
