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


def _worker_of(name: str):
    """The function that takes method ``name``'s parameters (behind the wrappers some are registered with)."""
    import explain_engine.explainers.limsse as limsse_module
    import explain_engine.explainers.perturbation as perturbation_module
    from explain_engine.explainers.registry import GROUPS, METHODS

    spec = METHODS[name]
    if spec.group:
        return GROUPS[spec.group][0]
    if name.startswith("limsse_"):
        return limsse_module.limsse
    if name.startswith(("omit_", "occ_")):
        return perturbation_module.ngram_relevance
    return spec.fn


def test_every_declared_method_parameter_is_one_the_method_takes():
    """The registry's declared parameters (the web app's bounds) name real keyword arguments."""
    import inspect

    import explain_engine.explainers  # noqa: F401 (registers every method)
    from explain_engine.explainers.registry import METHODS

    for name, spec in METHODS.items():
        taken = inspect.signature(_worker_of(name)).parameters
        missing = [p for p in spec.params if p not in taken]
        assert not missing, f"{name} declares {missing}, which it does not take"


def test_method_parameters_are_checked_against_the_registry():
    import explain_engine.explainers  # noqa: F401
    from explain_engine.explainers.registry import ParamError, check_params

    assert check_params("lime", {"n_samples": 500, "seed": 1}) == {"n_samples": 500, "seed": 1}
    assert check_params("gradients", {"tolerance": None, "max_steps": 4096})["max_steps"] == 4096
    assert check_params("random_ngram", {"sizes": [1, 3]}) == {"sizes": [1, 3]}
    for key, values, field in [
        ("lime", {"n_samples": 1e9}, "lime.n_samples"),
        ("lime", {"n_samples": 20_001}, "lime.n_samples"),
        ("gradients", {"max_steps": 10**8}, "gradients.max_steps"),
        ("gradients", {"steps": 0}, "gradients.steps"),
        ("lrp", {"eps": float("nan")}, "lrp.eps"),
        ("random_ngram", {"sizes": [1, 99]}, "random_ngram.sizes"),
        ("lime", {"typo": 1}, "lime.typo"),
        ("nope", {}, "nope"),
    ]:
        with pytest.raises(ParamError) as caught:
            check_params(key, values)
        assert caught.value.field == field
