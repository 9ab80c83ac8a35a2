"""The package is laid out by pipeline stage: no import cycle, no import of a higher stage.

Every `import` / `from ... import` of the package is read from source (module level and inside
functions alike: a function-level import is an import all the same), so the check needs no
import of the package and sees imports a test run might never execute.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from workflow_runs import ROOT

PACKAGE = ROOT / "stragglers"

# Stages from the ground floor up: a module may import its own stage or a lower one. Stages on
# one floor do not import each other.
FLOORS = [
    ["io"],
    ["formats"],
    ["traces", "evaluate", "simulate"],
    ["methods", "convert"],
    ["replay"],
    ["launch", "live"],
    ["report"],
    ["calibrate"],
    ["rules"],
]
FLOOR = {stage: level for level, stages in enumerate(FLOORS) for stage in stages}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def stage_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules `path` imports (a `from pkg import name` counts as the submodule
    `pkg.name` when there is one, else as `pkg`)."""
    found = set()
    me = module_name(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in modules
                else node.module
                for alias in node.names
            ]
        elif isinstance(node, ast.ImportFrom) and node.level:
            pytest.fail(f"{path}: relative import; the package uses absolute imports")
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != me and name.startswith("stragglers"):
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imports_of(path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules, or None."""
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue  # a package and its own submodules (the flat re-exports)
            if colour.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if colour.get(nxt) is None:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        colour[node] = 2
        return None

    for node in sorted(graph):
        if colour.get(node) is None:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in graph.items():
        own = stage_of(module)
        if own == "__init__":
            continue
        for target in targets:
            other = stage_of(target)
            if other == "__init__" or other == own:
                continue
            if FLOOR[other] >= FLOOR[own]:
                found.append(
                    f"{module} ({own}, floor {FLOOR[own]}) imports {target} "
                    f"({other}, floor {FLOOR[other]})"
                )
    return sorted(found)


def test_every_stage_has_a_floor():
    stages = {stage_of(m) for m in package_modules()} - {"__init__"}
    assert stages <= set(FLOOR), f"stages without a floor in FLOORS: {sorted(stages - set(FLOOR))}"


def test_no_import_cycle():
    assert find_cycle(import_graph()) is None, (
        f"import cycle: {' -> '.join(find_cycle(import_graph()))}"
    )


def test_no_module_imports_a_higher_or_sibling_stage():
    assert upward_imports(import_graph()) == []


def test_checks_catch_a_cycle_and_an_upward_import():
    """The two checks are not vacuous: a made-up graph with both is caught."""
    graph = {
        "stragglers.replay.core": {"stragglers.rules.predict"},
        "stragglers.rules.predict": {"stragglers.replay.core"},
    }
    assert find_cycle(graph) in (
        ["stragglers.replay.core", "stragglers.rules.predict", "stragglers.replay.core"],
        ["stragglers.rules.predict", "stragglers.replay.core", "stragglers.rules.predict"],
    )
    assert upward_imports(graph) == [
        "stragglers.replay.core (replay, floor 4) imports stragglers.rules.predict (rules, floor 8)"
    ]


ONE_FILE_PER_METHOD = {"methods", "launch/methods"}


def test_layout_page_lists_every_module():
    """docs/layout.md names every module of the package (a newcomer finds each)."""
    layout = (ROOT / "docs" / "layout.md").read_text()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.name == "__init__.py" and relative.parent != Path("."):
            continue  # a folder is listed by its name
        if relative.name == "__init__.py":
            continue
        folder = relative.parent
        if str(folder) in ONE_FILE_PER_METHOD:
            continue  # listed as a folder: one file per method, found by the registry
        listed = (
            re.search(rf"(?<![\w/]){re.escape(relative.stem)}(\.py)?\b", layout)
            if folder == Path(".") or folder.name in layout
            else None
        )
        if not listed:
            missing.append(str(relative))
    assert not missing, f"modules missing from docs/layout.md: {missing}"
