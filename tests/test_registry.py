"""The method registry: finds every method by its source, loads only what is asked for."""

from pathlib import Path

import pytest

from stragglers.methods import _registry, available_methods, get_method, load_method_dirs
from stragglers.methods.base import Method

EXTRA = Path(__file__).parent / "extra_methods"


def test_names_read_from_source_match_the_imported_classes():
    registry = _registry()  # imports every module
    assert set(available_methods()) >= set(registry)
    for name, cls in registry.items():
        assert get_method(name) is cls and issubclass(cls, Method)
        assert cls.family, f"{name} has no family"


def test_backbone_methods_are_registered():
    assert {"NURD", "NURD-NC", "GBTR", "Oracle"} <= set(available_methods())


def test_unknown_method_lists_the_available_ones():
    with pytest.raises(KeyError, match="available: .*NURD"):
        get_method("NoSuchMethod")


def test_methods_from_a_folder():
    assert load_method_dirs([EXTRA]) == ["AlwaysFails"]
    assert get_method("AlwaysFails").family == "Test"
    with pytest.raises(FileNotFoundError, match="method_dirs"):
        load_method_dirs([EXTRA / "missing"])
