"""Launch-time models: every `LaunchMethod` subclass with a class-level `name = "..."` in a
module of this folder (modules starting with `_` or named base are helpers). Names are read
from the source, so listing them (the workflow does, to check the config) imports no model."""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path

from stragglers.launch.methods.base import LaunchMethod
from stragglers.methods import declared_names
from stragglers.methods._source import declared_defaults
from stragglers.methods.base import merged_params


@cache
def _declared() -> dict[str, str]:
    return declared_names(__path__)


def available_launch_methods() -> list[str]:
    return sorted(_declared())


def get_launch_method(name: str) -> type[LaunchMethod]:
    if name not in _declared():
        raise ValueError(f"unknown launch method {name!r}; available: {available_launch_methods()}")
    module = importlib.import_module(f"{__name__}.{_declared()[name]}")
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, LaunchMethod)
            and vars(value).get("name") == name
        ):
            return value
    raise ValueError(f"launch method {name!r}: no class with that name in {module.__name__}")


def declared_launch_params(name: str) -> dict[str, object]:
    """The launch method's `defaults` (name -> Param), read from source without importing it."""
    if name not in _declared():
        raise ValueError(f"unknown launch method {name!r}; available: {available_launch_methods()}")
    return declared_defaults(Path(__path__[0]) / f"{_declared()[name]}.py", name)


def check_launch_params(name: str, params: dict | None) -> dict[str, object]:
    """As stragglers.methods.check_method_params, for a launch-time method."""
    return merged_params(f"launch method {name}", declared_launch_params(name), params)
