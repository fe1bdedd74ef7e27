# Django's choices enums as mypy should see them: a member (`OPEN = "open", "Open"`) is a str (or int)
# enum member whose value is the first item, not the (value, label) tuple it is written as.
import enum
from typing import Any, ClassVar

class Choices(enum.Enum):
    choices: ClassVar[list[tuple[Any, str]]]
    labels: ClassVar[list[str]]
    values: ClassVar[list[Any]]
    names: ClassVar[list[str]]
    @property
    def label(self) -> str: ...

class TextChoices(str, Choices):
    _value_: str
    @property
    def value(self) -> str: ...

class IntegerChoices(int, Choices):
    _value_: int
    @property
    def value(self) -> int: ...
