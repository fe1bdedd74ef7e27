# Django ships no type information; everything but its choices enums stays Any (see db/models/enums.pyi).
from typing import Any

def __getattr__(name: str) -> Any: ...
