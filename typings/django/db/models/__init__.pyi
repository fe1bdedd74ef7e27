from typing import Any

from django.db.models.enums import Choices as Choices
from django.db.models.enums import IntegerChoices as IntegerChoices
from django.db.models.enums import TextChoices as TextChoices

def __getattr__(name: str) -> Any: ...
