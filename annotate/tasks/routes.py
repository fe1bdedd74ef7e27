"""What the URLconfs share: the one pattern of a study's uid in a ``re_path`` (``path`` routes use the
``<uuid:uid>`` converter, which matches the same text), and the formats a results table downloads in."""

from __future__ import annotations

#: A lower-case UUID as Django's ``uuid`` path converter matches it.
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
#: The file formats of a results table (``studies/<uid>/results/<table>.<fmt>``).
TABLE_FORMATS = ("csv", "jsonl")
