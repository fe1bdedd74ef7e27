# Django's choices enums as mypy should see them: a member (`OPEN = "open", "Open"`) is a str (or int)
# enum member whose value is the first item, not the (value, label) tuple it is written as.
import enum
from typing import Any

class ChoicesType(enum.EnumMeta):
    @property
    def choices(cls) -> list[tuple[Any, str]]: ...
    @property
    def labels(cls) -> list[str]: ...
    @property
    def values(cls) -> list[Any]: ...
    @property
    def names(cls) -> list[str]: ...

class Choices(enum.Enum, metaclass=ChoicesType):  # type: ignore[misc]  # a base of enums: the members are its subclasses'
    @property
    def label(self) -> str: ...

class TextChoices(str, Choices):  # type: ignore[misc]  # a base of enums: the members are its subclasses'
    @property
    def value(self) -> str: ...

class IntegerChoices(int, Choices):  # type: ignore[misc]  # a base of enums: the members are its subclasses'
    @property
    def value(self) -> int: ...
