"""Explanation methods are shown by their engine title, with the registry's one-line description, never as
bare codes."""

from __future__ import annotations

from django.template import Context, Template

from annotate.templatetags.methods import method_description, method_name
from explain_engine.api import METHODS, TRAINING_ATTENTION


def test_every_registered_method_has_its_own_readable_name_and_a_description():
    codes = sorted(METHODS)
    names = {code: method_name(code) for code in codes}
    assert all(name != code for code, name in names.items()), [c for c, n in names.items() if n == c]
    assert len(set(names.values())) == len(codes)  # two methods never share a name
    assert all(method_description(code) == METHODS[code].doc != "" for code in codes)


def test_codes_are_read_as_poerner_et_al_name_them():
    assert method_name("grad_dot_int_s") == "Integrated gradients of s, dot product"
    assert method_name("grad_l2_1p") == "Simple gradient of p, L2 norm"
    assert method_name("omit_7") == "Omission of 7-grams"
    assert method_name("occ_3") == "Occlusion of 3-grams"
    assert method_name("limsse_ms_p") == "LIMSSE, magnitude-sensitive on p"
    assert TRAINING_ATTENTION == "attention (training)"
    # the weights stored at training are the attention method's weights: one name for the one map
    assert method_name(TRAINING_ATTENTION) == method_name("attention") == "Attention weights"
    assert method_description(TRAINING_ATTENTION)
    assert (method_name("no_such_method"), method_description("no_such_method")) == ("no_such_method", "")


def test_the_filters_show_the_name_and_escape_nothing_unsafe():
    page = Template(
        "{% load methods %}{% for m in methods %}<i title='{{ m|method_description }}'>{{ m|method_name }}</i>"
        "{% endfor %}"
    ).render(Context({"methods": ["limsse_ms_p", "<b>x</b>"]}))
    assert "LIMSSE, magnitude-sensitive on p" in page and "limsse_ms_p" not in page
    assert "Poerner et al. 2018" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>" not in page
