"""The site's opinion lexicon: Hu & Liu's (KDD 2004) ``positive-words.txt`` and ``negative-words.txt``, which the
human-vs-machine dashboards need for the cross-sentiment selection rates (Sen et al. 2020 §4.3).

A lexicon belongs to its owner. A researcher uploads the two files on the lexicon settings page; they are checked,
written in Hu & Liu's own encoding (ISO-8859-1) to ``MEDIA_ROOT/lexicon/researchers/<id>/hu-liu/`` in one rename, and
the dashboards of that researcher's studies read them from there (the engine's similarity report takes the folder).
The *site* lexicon (``MEDIA_ROOT/lexicon/hu-liu/``) is the one every other study falls back on; only an admin
changes it. ``settings.HATLAB_LEXICON_DIR`` still names a folder for a site without an upload; an uploaded
lexicon wins over it. Every change is logged with who made it (:class:`annotate.models.ChangeLog`).
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from annotate.infra.storage import media_root, replace_media_folder
from annotate.models import ChangeLog
from annotate.models.audit import record

LEXICON_KEY = "lexicon/hu-liu"
OWNER_KEY = "lexicon/researchers/{owner}/hu-liu"
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
    own: bool = False  # the owner's own lexicon; False: the site's


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


def save_lexicon(positive: bytes, negative: bytes, owner_id: int | None, actor=None) -> LexiconSummary:
    """Check both uploads and store them as ``owner_id``'s lexicon (None: the site's, an admin's to change),
    replacing the previous one in one rename, and log the change."""
    pos = parse_word_list(positive, "positive")
    neg = parse_word_list(negative, "negative")
    check_pair(pos, neg)
    folder = _work_folder(owner_id)
    for name, words in ((POSITIVE_FILE, pos), (NEGATIVE_FILE, neg)):
        (folder / name).write_text("".join(f"{w}\n" for w in words), encoding=ENCODING)
    dest = replace_media_folder(folder, _key(owner_id))
    summary = LexiconSummary(dest, True, len(set(pos)), len(set(neg)), own=owner_id is not None)
    target = "site lexicon" if owner_id is None else "own lexicon"
    record(
        actor,
        ChangeLog.Action.LEXICON,
        target,
        owner_id,
        positive=summary.positive,
        negative=summary.negative,
    )
    return summary


def _key(owner_id: int | None) -> str:
    return LEXICON_KEY if owner_id is None else OWNER_KEY.format(owner=int(owner_id))


def _work_folder(owner_id: int | None) -> Path:
    """A fresh folder beside the lexicon's (same file system, so storing it is a rename)."""
    parent = uploaded_folder(owner_id).parent
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".hu-liu-work-", dir=parent))


def uploaded_folder(owner_id: int | None = None) -> Path:
    """Where ``owner_id``'s uploaded lexicon lives (None: the site's)."""
    return media_root() / _key(owner_id)


def _complete(folder: Path) -> bool:
    return (folder / POSITIVE_FILE).is_file() and (folder / NEGATIVE_FILE).is_file()


def lexicon_dir(owner_id: int | None = None) -> str | None:
    """The folder the dashboards of ``owner_id``'s studies read the lexicon from: the owner's upload, else the
    site's upload, else ``HATLAB_LEXICON_DIR``, else None."""
    if owner_id is not None and _complete(uploaded_folder(owner_id)):
        return str(uploaded_folder(owner_id))
    if _complete(uploaded_folder()):
        return str(uploaded_folder())
    configured = getattr(settings, LEXICON_SETTING, "") or ""
    return configured or None


def lexicon_fingerprint(owner_id: int | None = None) -> str:
    """A digest of the lexicon ``owner_id``'s dashboards use ("" without one): a new upload invalidates cached
    figures."""
    folder = lexicon_dir(owner_id)
    if folder is None:
        return ""
    digest = hashlib.sha256(folder.encode())
    for name in (POSITIVE_FILE, NEGATIVE_FILE):
        try:
            digest.update((Path(folder) / name).read_bytes())
        except OSError:
            digest.update(b"missing")
    return digest.hexdigest()[:16]


def lexicon_summary(owner_id: int | None = None) -> LexiconSummary | None:
    """The lexicon ``owner_id``'s dashboards use and its word counts, or None when there is none (or its files
    cannot be read)."""
    folder = lexicon_dir(owner_id)
    if folder is None:
        return None
    path = Path(folder)
    try:
        pos = parse_word_list((path / POSITIVE_FILE).read_bytes(), "positive")
        neg = parse_word_list((path / NEGATIVE_FILE).read_bytes(), "negative")
    except (OSError, LexiconError):
        return None
    own = owner_id is not None and path == uploaded_folder(owner_id)
    uploaded = own or path == uploaded_folder()
    return LexiconSummary(path, uploaded, len(set(pos)), len(set(neg)), own=own)
