"""Read a method's declared parameters (`defaults`, a dict of `Param`) from its module's
source, without importing the module: the workflow checks the config's parameters when it
loads, and importing every method would import torch, PyOD and XGBoost.

The class-level `defaults = ...` expression is evaluated with nothing but the names it uses:
`Param`, the builtin types, and other classes' `defaults` or module constants that are
themselves read the same way (from this module, or imported from a module of the package,
e.g. GBTR's `{k: v for k, v in NURD.defaults.items() if ...}`). A class without `defaults`
inherits its bases' (MTL-f0 from `_MultiTask`, the detectors from `OutlierDetectionMethod`).
Anything else (a function call, an attribute of a third-party module) is an error naming the
class: declare parameters with literals. tests/test_method_contract.py checks that what is
read here equals the imported class's `defaults`.
"""

from __future__ import annotations

import ast
import types
from functools import cache
from pathlib import Path
from typing import Any

from stragglers.methods.base import Param

_PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the `stragglers` folder
# names every declaration may use; builtins besides these are not available
_ALLOWED = {
    "Param": Param,
    "int": int,
    "float": float,
    "bool": bool,
    "str": str,
    "list": list,
    "tuple": tuple,
    "dict": dict,
}
# the interfaces: a class deriving from one of them without `defaults` has no parameters
_ROOTS = {"Method", "LaunchMethod"}


class SourceError(ValueError):
    """A declaration that cannot be read from source."""


def module_file(module: str) -> Path | None:
    """The file of a `stragglers.` module, or None for any other module."""
    parts = module.split(".")
    if parts[0] != "stragglers":
        return None
    base = _PACKAGE_ROOT.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


class _Module:
    def __init__(self, path: Path):
        self.path = path
        self.package = ".".join(
            ("stragglers",) + path.relative_to(_PACKAGE_ROOT).with_suffix("").parts
        )
        tree = ast.parse(path.read_text(), filename=str(path))
        self.classes: dict[str, ast.ClassDef] = {}
        self.assigned: dict[str, ast.expr] = {}
        self.imported: dict[str, tuple[str, str]] = {}
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif (target := _target(node)) is not None and node.value is not None:
                self.assigned[target] = node.value
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = (node.module, alias.name)
        self._values: dict[str, Any] = {}

    def value(self, name: str, depth: int) -> Any:
        """A module-level name: a class (as a namespace holding `defaults`), a constant or
        an import from another module of the package."""
        if name in self._values:
            return self._values[name]
        if depth > 20:
            raise SourceError(f"{self.path}: {name!r} refers to itself")
        if name in _ALLOWED:
            value = _ALLOWED[name]
        elif name in self.classes:
            value = types.SimpleNamespace(defaults=self.class_defaults(name, depth + 1))
        elif name in self.assigned:
            value = self.evaluate(self.assigned[name], {}, depth + 1, name)
        elif name in self.imported:
            module, attr = self.imported[name]
            if attr in _ROOTS or module == "stragglers.methods.base" and attr == "Param":
                value = _ALLOWED["Param"] if attr == "Param" else types.SimpleNamespace(defaults={})
            else:
                path = module_file(module)
                if path is None:
                    raise SourceError(
                        f"{self.path}: {name!r} comes from {module}, outside the package; "
                        "declare parameters with literals"
                    )
                value = _module(path).value(attr, depth + 1)
        else:
            raise SourceError(f"{self.path}: {name!r} is not defined at the module's top level")
        self._values[name] = value
        return value

    def class_defaults(self, class_name: str, depth: int = 0) -> dict[str, Any]:
        """The `defaults` of a class of this module: its own declaration, else its bases'."""
        node = self.classes[class_name]
        body: dict[str, ast.expr] = {}
        for statement in node.body:
            target = _target(statement)
            if target is not None and statement.value is not None:
                body[target] = statement.value
        if "defaults" in body:
            return self.evaluate(body["defaults"], body, depth, f"{class_name}.defaults")
        for base in node.bases:
            if isinstance(base, ast.Name):
                if base.id in _ROOTS and base.id not in self.classes:
                    return {}
                return dict(self.value(base.id, depth + 1).defaults)
        raise SourceError(f"{self.path}: class {class_name} has no readable base class")

    def evaluate(
        self, expr: ast.expr, class_body: dict[str, ast.expr], depth: int, what: str
    ) -> Any:
        stored = {
            n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        namespace: dict[str, Any] = {"__builtins__": {}}
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and node.id not in stored and node.id not in namespace:
                if node.id in class_body and node.id != "defaults":
                    namespace[node.id] = self.evaluate(class_body[node.id], {}, depth + 1, node.id)
                else:
                    namespace[node.id] = self.value(node.id, depth + 1)
        code = compile(ast.Expression(expr), str(self.path), "eval")
        try:
            return eval(code, namespace)  # noqa: S307 - the package's own declarations
        except Exception as exc:
            raise SourceError(f"{self.path}: {what} cannot be read from source: {exc}") from exc


def _target(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        return statement.targets[0].id
    return None


@cache
def _module(path: Path) -> _Module:
    return _Module(path)


def declared_defaults(path: Path | str, method_name: str) -> dict[str, Any]:
    """The `defaults` of the class whose `name = "<method_name>"` in the module at `path`."""
    module = _module(Path(path).resolve())
    for class_name, node in module.classes.items():
        for statement in node.body:
            value = getattr(statement, "value", None)
            if (
                _target(statement) == "name"
                and isinstance(value, ast.Constant)
                and value.value == method_name
            ):
                return module.class_defaults(class_name)
    raise SourceError(f"{path}: no class with name = {method_name!r}")
