"""Engine output made storable as JSON: in a file, on stdout, or in a PostgreSQL ``jsonb`` column.

Strict JSON (and ``jsonb``) has no NaN or infinities, and ``json.dumps`` knows no numpy types, so
every report and explanation goes through :func:`json_safe` before it is written anywhere.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON data.

    * numpy scalars become Python numbers and numpy arrays nested lists;
    * non-finite floats (NaN, ±inf) become ``None`` — "no figure", which is what a NaN estimate means;
    * tuples become lists and mapping keys strings (as ``json.dumps`` would write them, but also for
      keys it would refuse, such as tuples).
    """
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


__all__ = ["json_safe"]
