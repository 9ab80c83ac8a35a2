"""Registry of straggler predictors: every `Method` subclass in this package's modules.

Adding a method means adding one module here with a `Method` subclass that sets `name`,
and naming it in the config's `methods`. Methods kept outside the package (a user's own, or a
test's) live in a folder named in the config's `method_dirs`: every `*.py` file there is
loaded the same way.

Each method declares its parameters beside their defaults (`defaults = {"alpha": Param(0.5,
float, ge=0, le=1), ...}`, stragglers.methods.base.Param). `declared_params` reads them from
the source (stragglers.methods._source) and `check_method_params` runs the constructor's check
on a config's parameters, both without importing the method's module (the workflow does so
when it loads). tests/test_method_contract.py runs every registered method through the
contract checks of tests/method_checks.py.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import sys
from functools import cache
from pathlib import Path

from stragglers.methods._source import declared_defaults
from stragglers.methods.base import Checkpoint, JobInfo, Method, Param, merged_params

__all__ = [
    "Checkpoint",
    "JobInfo",
    "Method",
    "Param",
    "available_methods",
    "check_method_params",
    "declared_cross_job",
    "declared_params",
    "get_method",
    "load_method_dirs",
    "method_entry",
]

_external: dict[str, type[Method]] = {}


def _methods_in(module) -> list[type[Method]]:
    return [
        obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, Method)
        and obj is not Method
        and not inspect.isabstract(obj)
        and obj.__module__ == module.__name__
    ]


@cache
def _declared() -> dict[str, str]:
    return declared_names(__path__)


def declared_names(package_path) -> dict[str, str]:
    """Method name -> module of a methods package, read from the modules' source (a
    class-level `name = "..."`), so that listing methods or loading one does not import
    every method's dependencies. Modules starting with `_` and `base` are helpers."""
    found: dict[str, str] = {}
    folder = Path(list(package_path)[0])
    for module_info in pkgutil.iter_modules(package_path):
        if module_info.name.startswith("_") or module_info.name == "base":
            continue
        tree = ast.parse((folder / f"{module_info.name}.py").read_text())
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            for statement in node.body:
                target = getattr(statement, "target", None) or (
                    statement.targets[0] if isinstance(statement, ast.Assign) else None
                )
                value = getattr(statement, "value", None)
                if (
                    isinstance(target, ast.Name)
                    and target.id == "name"
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                ):
                    if value.value in found and found[value.value] != module_info.name:
                        raise RuntimeError(
                            f"method name {value.value!r} defined twice: "
                            f"{found[value.value]} and {module_info.name}"
                        )
                    found[value.value] = module_info.name
    return found


@cache
def _class_constants(name: str) -> dict[str, object]:
    """Class-level constants (`x = <literal>`) of the package method called `name`, read
    from its module's source without importing it."""
    module = _declared()[name]
    tree = ast.parse((Path(__path__[0]) / f"{module}.py").read_text())
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        constants: dict[str, object] = {}
        for statement in node.body:
            target = getattr(statement, "target", None) or (
                statement.targets[0] if isinstance(statement, ast.Assign) else None
            )
            value = getattr(statement, "value", None)
            if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
                constants[target.id] = value.value
        if constants.get("name") == name:
            return constants
    return {}


def declared_cross_job(name: str) -> bool:
    """Whether a method learns from earlier jobs (`cross_job = True`), without importing the
    package's method modules (the workflow asks this to choose the predict rule's inputs)."""
    if name in _external:
        return bool(_external[name].cross_job)
    if name in _declared():
        return bool(_class_constants(name).get("cross_job", False))
    raise KeyError(f"no method named {name!r}; available: {', '.join(available_methods())}")


def declared_params(name: str) -> dict[str, object]:
    """The method's `defaults` (name -> Param), read from its module's source for the
    package's methods (no import: stragglers.methods._source); a loaded external method's
    from its class."""
    if name in _external:
        return dict(_external[name].defaults)
    if name in _declared():
        return declared_defaults(Path(__path__[0]) / f"{_declared()[name]}.py", name)
    raise KeyError(f"no method named {name!r}; available: {', '.join(available_methods())}")


def check_method_params(name: str, params: dict | None) -> dict[str, object]:
    """The method's parameters with `params` over the defaults; an unknown or renamed
    parameter, a wrong type or a value out of range is a ValueError naming the method, the
    parameter and what it takes. The same check the constructor runs, without importing the
    method (the workflow checks the config with it when it loads)."""
    return merged_params(f"method {name}", declared_params(name), params)


def method_entry(label: str, entry: dict | None) -> tuple[str, dict]:
    """The method a config `methods` entry runs and that method's parameters.

    An entry is `<method name>: {parameters}`, or `<label>: {method: <method name>,
    parameters}`, which runs the named method under the label (one method under several
    settings in one run, each its own row: `Spark 3 speculation: {method: Spark-speculation,
    multiplier: 1.5, quantile: 0.75}`). The label is the method's name in every output and a
    folder of results/, so it may not hold a slash, and may not be another method's name."""
    params = dict(entry or {})
    name = params.pop("method", label)
    if not isinstance(name, str):
        raise ValueError(f"config methods.{label}: 'method' must be a method's name, got {name!r}")
    if not label or "/" in label or "\\" in label or label != label.strip() or label[0] == ".":
        raise ValueError(
            f"config methods: {label!r} cannot name a folder of results/ (no slash or "
            "backslash, no leading dot, no surrounding spaces)"
        )
    if name != label and label in available_methods():
        raise ValueError(
            f"config methods.{label}: the label is the name of another method; "
            f"choose a label that is not a method's name to run {name!r}"
        )
    return name, params


@cache
def _registry() -> dict[str, type[Method]]:
    """Every method class of the package (imports all method modules)."""
    found: dict[str, type[Method]] = {}
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_") or module_info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for obj in _methods_in(module):
            _add(found, obj)
    return found


def _add(found: dict[str, type[Method]], obj: type[Method]) -> None:
    if obj.name in found and found[obj.name] is not obj:
        raise RuntimeError(
            f"method name {obj.name!r} defined twice: "
            f"{found[obj.name].__module__} and {obj.__module__}"
        )
    found[obj.name] = obj


def load_method_dirs(directories) -> list[str]:
    """Register the methods of every `*.py` file in these folders; returns their names."""
    names = []
    for directory in directories or []:
        folder = Path(directory)
        if not folder.is_dir():
            raise FileNotFoundError(f"method_dirs: {folder} is not a directory")
        for path in sorted(folder.glob("*.py")):
            module_name = f"stragglers_user_methods.{folder.name}.{path.stem}"
            if module_name in sys.modules:
                module = sys.modules[module_name]
            else:
                spec = importlib.util.spec_from_file_location(module_name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[module_name] = module
                spec.loader.exec_module(module)
            for obj in _methods_in(module):
                if obj.name in _declared():
                    raise RuntimeError(f"{path}: method name {obj.name!r} is already taken")
                _add(_external, obj)
                names.append(obj.name)
    return names


def available_methods() -> list[str]:
    return sorted(set(_declared()) | set(_external))


def get_method(name: str) -> type[Method]:
    if name in _external:
        return _external[name]
    if name in _declared():
        module = importlib.import_module(f"{__name__}.{_declared()[name]}")
        for obj in _methods_in(module):
            if obj.name == name:
                return obj
    try:
        return _registry()[name]
    except KeyError:
        raise KeyError(
            f"no method named {name!r}; available: {', '.join(available_methods())}"
        ) from None
