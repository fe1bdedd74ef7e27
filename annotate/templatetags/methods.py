"""Template filters that show an explanation method by its title, with its one-line description, both
from the engine (``explain_engine.api.describe_method``)."""

from django import template

from explain_engine import api as engine

register = template.Library()


@register.filter
def method_name(code: str) -> str:
    """The method's title (an unknown code is shown as it is)."""
    return engine.describe_method(code).title


@register.filter
def method_description(code: str) -> str:
    """The method's one-line description (empty for an unknown code)."""
    return engine.describe_method(code).doc
