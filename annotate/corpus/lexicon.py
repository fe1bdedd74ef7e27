"""The site's opinion lexicon: Hu & Liu's (KDD 2004) ``positive-words.txt`` and ``negative-words.txt``, which the
human-vs-machine dashboards need for the cross-sentiment selection rates (Sen et al. 2020 §4.3).

A researcher uploads the two files once on the lexicon settings page; they are checked, written in Hu & Liu's own
encoding (ISO-8859-1) to ``MEDIA_ROOT/lexicon/hu-liu/`` in one rename, and every dashboard reads them from there
(the engine's similarity report takes the folder). ``settings.HATLAB_LEXICON_DIR`` still names a
folder for a site without an upload; an uploaded lexicon wins over it.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from annotate.infra.storage import media_root, replace_media_folder

LEXICON_KEY = "lexicon/hu-liu"
LEXICON_SETTING = "HATLAB_LEXICON_DIR"
POSITIVE_FILE = "positive-words.txt"
NEGATIVE_FILE = "negative-words.txt"
ENCODING = "latin-1"
MAX_FILE_BYTES = 2 * 1024 * 1024  # the real lists are 21 kB and 46 kB
MAX_SHARED_FRACTION = 0.5  # the real lists share 3 words; half of the shorter list in both is a wrong upload


class LexiconError(ValueError):
    """An uploaded word list that is not in Hu & Liu's format; ``field`` names the file."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class LexiconSummary:
    """Where the active lexicon is and how many words each list holds."""

    folder: Path
    uploaded: bool  # False: the folder of ``settings.HATLAB_LEXICON_DIR``
    positive: int
    negative: int


def _decode(data: bytes, field: str) -> str:
    """The file's text: UTF-8 when it decodes as such, else ISO-8859-1 (the encoding Hu & Liu distribute)."""
    if b"\x00" in data:
        raise LexiconError(field, "The file is not a text file (it holds NUL bytes).")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode(ENCODING)


def parse_word_list(data: bytes, field: str) -> list[str]:
    """The words of one uploaded list: one word per line, ``;`` lines are comments, blank lines skipped.

    Raises :class:`LexiconError` naming the first line that is not a single word, or when no word is left.
    """
    if len(data) > MAX_FILE_BYTES:
        raise LexiconError(
            field, f"The file has {len(data)} bytes; a word list has at most {MAX_FILE_BYTES}."
        )
    text = _decode(data, field).lstrip("\ufeff")
    words: list[str] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        word = line.strip()
        if not word or word.startswith(";"):
            continue
        if len(word.split()) > 1 or "," in word or "\t" in word:
            shown = word if len(word) <= 40 else word[:40] + "…"
            raise LexiconError(
                field,
                f"Line {lineno} holds “{shown}”: each line must hold one word (comment lines start with ';').",
            )
        try:
            word.encode(ENCODING)
        except UnicodeEncodeError:
            raise LexiconError(
                field, f"Line {lineno}: “{word}” has characters outside ISO-8859-1, the lexicon's encoding."
            ) from None
        words.append(word)
    if not words:
        raise LexiconError(field, "The file holds no word: only blank or ';' comment lines.")
    return words


def check_pair(positive: list[str], negative: list[str]) -> None:
    """Refuse two lists that are mostly the same words (the same file twice, or a mix-up)."""
    shared = len(set(positive) & set(negative))
    if shared > MAX_SHARED_FRACTION * min(len(set(positive)), len(set(negative))):
        raise LexiconError(
            "negative",
            f"{shared} words are in both lists: the positive and the negative file must be different lists.",
        )


def save_lexicon(positive: bytes, negative: bytes) -> LexiconSummary:
    """Check both uploads and store them as the site's lexicon (replacing the previous one in one rename)."""
    pos = parse_word_list(positive, "positive")
    neg = parse_word_list(negative, "negative")
    check_pair(pos, neg)
    folder = _work_folder()
    for name, words in ((POSITIVE_FILE, pos), (NEGATIVE_FILE, neg)):
        (folder / name).write_text("".join(f"{w}\n" for w in words), encoding=ENCODING)
    dest = replace_media_folder(folder, LEXICON_KEY)
    return LexiconSummary(dest, True, len(set(pos)), len(set(neg)))


def _work_folder() -> Path:
    """A fresh folder beside the lexicon's (same file system, so storing it is a rename)."""
    parent = uploaded_folder().parent
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".hu-liu-work-", dir=parent))


def uploaded_folder() -> Path:
    return media_root() / LEXICON_KEY


def _complete(folder: Path) -> bool:
    return (folder / POSITIVE_FILE).is_file() and (folder / NEGATIVE_FILE).is_file()


def lexicon_dir() -> str | None:
    """The folder the dashboards read the lexicon from: the uploaded one, else ``HATLAB_LEXICON_DIR``, else None."""
    if _complete(uploaded_folder()):
        return str(uploaded_folder())
    configured = getattr(settings, LEXICON_SETTING, "") or ""
    return configured or None


def lexicon_fingerprint() -> str:
    """A digest of the active lexicon's two files ("" without one): a new upload invalidates cached figures."""
    folder = lexicon_dir()
    if folder is None:
        return ""
    digest = hashlib.sha256(folder.encode())
    for name in (POSITIVE_FILE, NEGATIVE_FILE):
        try:
            digest.update((Path(folder) / name).read_bytes())
        except OSError:
            digest.update(b"missing")
    return digest.hexdigest()[:16]


def lexicon_summary() -> LexiconSummary | None:
    """The active lexicon and its word counts, or None when there is none (or its files cannot be read)."""
    folder = lexicon_dir()
    if folder is None:
        return None
    path = Path(folder)
    try:
        pos = parse_word_list((path / POSITIVE_FILE).read_bytes(), "positive")
        neg = parse_word_list((path / NEGATIVE_FILE).read_bytes(), "negative")
    except (OSError, LexiconError):
        return None
    return LexiconSummary(path, path == uploaded_folder(), len(set(pos)), len(set(neg)))
