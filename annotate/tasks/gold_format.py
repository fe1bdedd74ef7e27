"""Gold answers as people write them in a file or read them on a page: word numbers instead of 0/1 maps,
"yes"/"no" instead of booleans. Each kind's ``gold_answer`` turns a row of a gold import file into the
answer its ``validate_answer`` checks, and ``describe_gold`` says a gold answer in words."""

from __future__ import annotations

from typing import Any

#: Values read as "yes" and "no" in a file's cells.
YES = {"1", "yes", "y", "true"}
NO = {"0", "no", "n", "false", ""}


def cell(row: dict[str, Any], name: str) -> Any:
    """The row's value of column ``name``; ``ValueError`` saying it is missing."""
    value = row.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError(f"the {name} column is empty")
    return value.strip() if isinstance(value, str) else value


def word_map(value: Any, words: list[str], column: str = "words") -> list[int]:
    """Word numbers (from 1; a list, or a text such as ``"3 4 7"`` or ``"3, 4"``; empty: none) as a 0/1
    map over ``words``; ``ValueError`` naming the bad number."""
    if value is None or value == "":
        numbers: list[Any] = []
    elif isinstance(value, list):
        numbers = value
    else:
        numbers = str(value).replace(",", " ").split()
    marks = [0] * len(words)
    for number in numbers:
        text = str(number).strip()
        if isinstance(number, bool) or not text.isdigit() or not 1 <= int(text) <= len(words):
            raise ValueError(
                f"{column} must list word numbers from 1 to {len(words)}; {text or repr(number)} is not one"
            )
        marks[int(text) - 1] = 1
    return marks


def yes_no(value: Any, column: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in YES:
        return True
    if text in NO:
        return False
    raise ValueError(f"{column} must be yes or no, not {value!r}")


def marked_words(words: list[str], marks: list[int]) -> str:
    """The marked words with their numbers: ``3 “great”, 5 “food”`` (``none`` when nothing is marked)."""
    chosen = [f"{i + 1} “{w}”" for i, (w, m) in enumerate(zip(words, marks, strict=False)) if m]
    return ", ".join(chosen) if chosen else "none"
