"""Micro-benchmark of reading a submission's body: :func:`json.loads` alone vs
:func:`annotate.infra.json_input.parse_json` (size, depth and unstorable-value checks included), best of five
repeats, in microseconds per body. Two bodies: a typical highlight answer (60 words, a few signals) and one
with 150 signal events (more opening brackets than the depth limit, so the depth is computed). Then the
hostile body (``[`` x40, ``"``, then ``\\"`` repeated: an unterminated string of escaped quotes) at 8, 32 and
80 KB, in milliseconds, best of three (refused either way; the time is what one request costs a web worker). Usage::

    PYTHONPATH=. .venv/bin/python bench/json_input.py
"""

from __future__ import annotations

import contextlib
import json
import time
import timeit
import uuid

from annotate.infra.json_input import JSONInputError, parse_json

TIMINGS = {"read_ms": 1200, "answer_ms": 800, "label_at_ms": 1200, "first_highlight_at_ms": 1500}
BODIES = {
    "typical": {
        "submission_key": str(uuid.uuid4()),
        "answer": {"label": "positive", "map": [0] * 59 + [1]},
        "timings": TIMINGS,
        "signals": {"visibility_changes": 0, "pastes": 0},
        "next": True,
    },
    "150 signal events": {
        "submission_key": str(uuid.uuid4()),
        "answer": {"label": "positive", "map": [0] * 400},
        "timings": TIMINGS,
        "signals": {"events": [{"t": i, "k": "blur"} for i in range(150)]},
    },
}


def best_us(run, number: int = 20_000) -> float:
    return min(timeit.repeat(run, number=number, repeat=5)) / number * 1e6


def main() -> None:
    for name, body in BODIES.items():
        raw = json.dumps(body).encode()
        plain = best_us(lambda raw=raw: json.loads(raw))
        checked = best_us(lambda raw=raw: parse_json(raw, max_bytes=256 * 1024, max_depth=32))
        print(
            f"{name}: {len(raw)} bytes: json.loads {plain:.1f} us, parse_json {checked:.1f} us, "
            f"added {checked - plain:.1f} us"
        )
    hostile = {}
    for kb in (8, 32, 80):
        body = b"[" * 40 + b'"' + b'\\"' * ((kb * 1024 - 41) // 2)
        times = []
        for _ in range(3):  # best of three (the first call also pays for warming up)
            start = time.perf_counter()
            with contextlib.suppress(JSONInputError):
                parse_json(body, max_bytes=2 * 1024 * 1024, max_depth=32)
            times.append(time.perf_counter() - start)
        hostile[f"hostile_{kb}kb_ms"] = round(min(times) * 1e3, 2)
        print(f"hostile body, {kb} KB: {hostile[f'hostile_{kb}kb_ms']} ms")
    print(json.dumps(hostile))


if __name__ == "__main__":
    main()
