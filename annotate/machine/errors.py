"""The error a bad request to the machine side raises: it names the offending field."""

from __future__ import annotations


class MachineInputError(ValueError):
    """Bad input for a model run or an explanation job; ``field`` names what was wrong."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def as_dict(self) -> dict[str, list[str]]:
        """The shape DRF uses for validation errors: ``{field: [message]}``."""
        return {self.field: [self.message]}
