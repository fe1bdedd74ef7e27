"""The one registry type: required names, refused duplicates, unknown names answered with the known ones."""

import pytest

from explain_engine.registry import DuplicateName, Registry, UnknownName, discover


def test_register_and_read_back_with_metadata():
    reg: Registry = Registry("widget")

    @reg.register("b", samples=True)
    def b():
        return "b"

    reg.add("a", "entry-a", samples=False)
    assert reg["b"] is b and reg["a"] == "entry-a"
    assert list(reg) == ["b", "a"] and len(reg) == 2 and "a" in reg and "c" not in reg
    assert reg.meta("b")["samples"] is True
    assert reg.where(samples=False) == ["a"]
    with pytest.raises(TypeError):
        reg.meta("b")["samples"] = False  # metadata is read-only


def test_duplicate_and_empty_names_are_refused():
    reg: Registry = Registry("widget")
    reg.add("a", 1)
    with pytest.raises(DuplicateName, match="widget 'a' is already registered"):
        reg.add("a", 2)
    assert reg["a"] == 1
    with pytest.raises(ValueError, match="non-empty name"):
        reg.add("", 3)


def test_unknown_name_lists_the_known_ones():
    reg: Registry = Registry("widget")
    reg.add("beta", 1)
    reg.add("alpha", 2)
    with pytest.raises(UnknownName) as err:
        reg["gamma"]
    assert str(err.value) == "unknown widget 'gamma'; known: alpha, beta"
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)
    with pytest.raises(UnknownName):
        reg.meta("gamma")
    assert reg.get("gamma") is None


def test_discover_imports_public_modules_in_order():
    names = discover("explain_engine.datasets")
    assert names == sorted(names) and all(not n.startswith("_") for n in names)
