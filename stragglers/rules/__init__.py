"""Rules: each Snakemake rule's entry point, one module per workflow/rules/*.smk file, one
function per rule, named as the rule. A rule's wildcards, input, output and params names are
its function's keyword arguments; scripts/run.py, every rule's `script:`, calls it through
`run` (docs/layout.md). The work itself stays in its stage; these take plain paths and values,
so they can be tested without Snakemake.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any


def rule_module(rule: str, rules_dir: Path | str) -> str:
    """The stem of the .smk file in `rules_dir` that defines `rule` (its module here)."""
    pattern = re.compile(rf"^rule {re.escape(rule)}:", re.MULTILINE)
    for smk in sorted(Path(rules_dir).glob("*.smk")):
        if pattern.search(smk.read_text()):
            return smk.stem
    raise LookupError(f"rule {rule}: defined in no {Path(rules_dir)}/*.smk file")


def rule_function(rule: str, rules_dir: Path | str) -> Callable[..., Any]:
    """stragglers.rules.<the rule's .smk file>.<rule>."""
    module = importlib.import_module(f"{__name__}.{rule_module(rule, rules_dir)}")
    function = getattr(module, rule, None)
    if function is None:
        raise LookupError(f"rule {rule}: {module.__name__} has no function {rule}")
    return function


def _named(rule: str, part: str, items: Any) -> dict[str, Any]:
    """A Snakemake named list's items by name (a list item as a plain list); an item without
    a name would be lost to the function, so it is an error naming the rule."""
    named = {}
    for name, value in items._allitems():
        if name is None:
            raise ValueError(f"rule {rule}: every {part} item needs a name (one is {value!r})")
        named[name] = list(value) if isinstance(value, list) else value
    return named


def rule_arguments(snakemake: Any) -> dict[str, Any]:
    """A rule's wildcards, input, output and params as one set of keyword arguments; a name
    used twice is an error naming both places."""
    arguments: dict[str, Any] = {}
    where: dict[str, str] = {}
    for part in ("wildcards", "input", "output", "params"):
        for name, value in _named(snakemake.rule, part, getattr(snakemake, part)).items():
            if name in arguments:
                raise ValueError(
                    f"rule {snakemake.rule}: {name!r} names both one of its {where[name]} "
                    f"and one of its {part}"
                )
            arguments[name], where[name] = value, part
    return arguments


def run(snakemake: Any) -> Any:
    """Run the rule of this script call: its function with its names, logged (run_rule)."""
    from stragglers.io import run_rule

    rules_dir = Path(snakemake.scriptdir).parent / "workflow" / "rules"
    function = rule_function(snakemake.rule, rules_dir)
    return run_rule(snakemake.log[0], lambda: function(**rule_arguments(snakemake)))
