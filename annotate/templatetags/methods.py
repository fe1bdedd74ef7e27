"""Template filters that show an explanation method by its name, with the registry's description."""

from django import template

from annotate.machine.method_names import method_description, method_name

register = template.Library()
register.filter("method_name", method_name)
register.filter("method_description", method_description)
