"""One registry for both kinds of method: the online methods (`stragglers.methods`, on
`Method`) and the launch-time models (`stragglers.launch.methods`, on `LaunchMethod`).

A registry imports every module of its package (modules starting with `_`, `base` and this
one are helpers) and of the config's `method_dirs`, and keeps each class that declares its own
`name`. Method modules import their heavy libraries inside the functions that use them, so
importing them all is cheap: the workflow does it when it loads, to check the config's
method names and parameters and to learn which files define each method (`source_files`,
inputs of that method's jobs).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import sys
from functools import cached_property
from pathlib import Path
from typing import Any

from stragglers.methods.base import merged_params

_HELPERS = {"base", "registry"}  # modules of a methods package that hold no method


class UnknownMethodError(KeyError, ValueError):
    """A method name no registry holds (a KeyError for lookups, a ValueError for checks)."""

    def __str__(self) -> str:  # KeyError's own quotes its message
        return str(self.args[0])


class Registry:
    """The methods of one package (`package`, on base class `base`) and of `method_dirs`;
    `noun` names them in messages ("method", "launch method")."""

    def __init__(self, package: str, base: type, noun: str):
        self.package = package
        self.base = base
        self.noun = noun
        self._external: dict[str, type] = {}
        self._files: dict[str, list[Path]] = {}  # source_files, asked once per job of the DAG

    def _classes_in(self, module) -> list[type]:
        return [
            obj
            for obj in vars(module).values()
            if inspect.isclass(obj)
            and issubclass(obj, self.base)
            and obj.__module__ == module.__name__
            and "name" in vars(obj)
            and not inspect.isabstract(obj)
        ]

    @cached_property
    def _package(self) -> dict[str, type]:
        found: dict[str, type] = {}
        path = importlib.import_module(self.package).__path__
        for info in pkgutil.iter_modules(path):
            if info.name.startswith("_") or info.name in _HELPERS:
                continue
            module = importlib.import_module(f"{self.package}.{info.name}")
            for obj in self._classes_in(module):
                if obj.name in found:
                    raise RuntimeError(
                        f"{self.noun} name {obj.name!r} defined twice: "
                        f"{found[obj.name].__module__} and {obj.__module__}"
                    )
                found[obj.name] = obj
        return found

    def names(self) -> list[str]:
        """Every method's name, the package's and those loaded from `method_dirs`."""
        return sorted(set(self._package) | set(self._external))

    def get(self, name: str) -> type:
        """The class of the method called `name`."""
        found = self._external.get(name) or self._package.get(name)
        if found is None:
            raise UnknownMethodError(
                f"no {self.noun} named {name!r}; available: {', '.join(self.names())}"
            )
        return found

    def params(self, name: str) -> dict[str, Any]:
        """The method's declared parameters (name -> Param)."""
        return dict(self.get(name).defaults)

    def check_params(self, name: str, params: dict | None) -> dict[str, Any]:
        """The method's parameters with `params` over the defaults; an unknown or renamed
        parameter, a wrong type or a value out of range is a ValueError naming the method, the
        parameter and what it takes (the constructor's own check)."""
        return merged_params(f"{self.noun} {name}", self.params(name), params)

    def load_dirs(self, directories) -> list[str]:
        """Register the methods of every `*.py` file in these folders; returns their names."""
        names = []
        for directory in directories or []:
            folder = Path(directory)
            if not folder.is_dir():
                raise FileNotFoundError(f"method_dirs: {folder} is not a directory")
            for path in sorted(folder.glob("*.py")):
                for obj in self._classes_in(_load_file(folder, path)):
                    if obj.name in self._package:
                        raise RuntimeError(
                            f"{path}: {self.noun} name {obj.name!r} is already taken"
                        )
                    known = self._external.setdefault(obj.name, obj)
                    if known is not obj:
                        raise RuntimeError(
                            f"{path}: {self.noun} name {obj.name!r} is already taken by "
                            f"{known.__module__}"
                        )
                    names.append(obj.name)
        return names

    def source_files(self, name: str) -> list[Path]:
        """The files that define the method: its module, and every module of the package (or
        of its method folder) that module builds on, followed through the classes, functions,
        constants and modules they hold at their top level (NURD's file for GBTR, the shared
        helpers `_*.py`, base.py), and the modules it names in `lazy_modules` with the
        package's modules those import at their top, read from their source (importing them
        would import their heavy libraries). A change to one of them can change the method's
        output."""
        if name not in self._files:
            self._files[name] = self._source_files(name)
        return list(self._files[name])

    def _source_files(self, name: str) -> list[Path]:
        modules: dict[str, Path] = {}
        mro = self.get(name).__mro__
        pending = [klass.__module__ for klass in mro]
        lazy = [m for klass in mro for m in getattr(klass, "lazy_modules", ())]
        while lazy:
            name = lazy.pop()
            path = Path(importlib.util.find_spec(name).origin).resolve()
            if name in modules or name == __name__ or path.name == "__init__.py":
                continue
            modules[name] = path
            lazy.extend(_package_imports(path))
        while pending:
            module = sys.modules.get(pending.pop())
            if module is None or module.__name__ in modules or not _tracked(module):
                continue
            modules[module.__name__] = Path(module.__file__).resolve()
            for value in vars(module).values():
                origin = value.__name__ if inspect.ismodule(value) else _module_of(value)
                if origin:
                    pending.append(origin)
        return sorted(set(modules.values()))


_USER_PACKAGE = "stragglers_user_methods"  # where the modules of `method_dirs` are imported


def _load_file(folder: Path, path: Path):
    """The module of one `method_dirs` file, imported once (both registries read it)."""
    module_name = f"{_USER_PACKAGE}.{folder.name}.{path.stem}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


def _module_of(value: Any) -> str | None:
    origin = getattr(value, "__module__", None)
    return origin if isinstance(origin, str) else None


def _package_imports(path: Path) -> list[str]:
    """The package's modules a module's source imports at its top level (found without
    importing them: only their parent packages)."""
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            if _is_package(node.module):  # `from stragglers.methods import _helper`
                names += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return [
        name
        for name in names
        if name.startswith("stragglers.") and importlib.util.find_spec(name) is not None
    ]


def _is_package(name: str) -> bool:
    spec = importlib.util.find_spec(name) if name.startswith("stragglers") else None
    return spec is not None and spec.submodule_search_locations is not None


def _tracked(module) -> bool:
    """A module whose source belongs to a method: the package's, or a method folder's file;
    not a registry (package `__init__` files and this module list every method)."""
    name = module.__name__
    if name.startswith(f"{_USER_PACKAGE}."):
        return True
    return (
        name.startswith("stragglers.")
        and name != __name__
        and Path(getattr(module, "__file__", "") or "").name != "__init__.py"
    )
