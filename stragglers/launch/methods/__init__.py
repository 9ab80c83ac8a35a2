"""Launch-time models: every `LaunchMethod` subclass with a `name` in a module of this folder
(modules starting with `_` or named base/registry are helpers)."""

from __future__ import annotations

import importlib
import pkgutil

from stragglers.launch.methods.base import LaunchMethod


def available_launch_methods() -> dict[str, type[LaunchMethod]]:
    found: dict[str, type[LaunchMethod]] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("_") or module.name == "base":
            continue
        loaded = importlib.import_module(f"{__name__}.{module.name}")
        for value in vars(loaded).values():
            if (
                isinstance(value, type) and issubclass(value, LaunchMethod)
                and value.__module__ == loaded.__name__ and "name" in vars(value)
            ):
                if value.name in found:
                    raise ValueError(f"launch method {value.name!r} defined twice ({loaded.__name__})")
                found[value.name] = value
    return found


def get_launch_method(name: str) -> type[LaunchMethod]:
    methods = available_launch_methods()
    if name not in methods:
        raise ValueError(f"unknown launch method {name!r}; available: {sorted(methods)}")
    return methods[name]
