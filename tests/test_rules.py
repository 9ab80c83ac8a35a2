"""One hop from a rule to its code (stragglers/rules/__init__.py, scripts/run.py): every rule
with a script has its entry in the table RULES and its function, named as the rule, in the
module named as its .smk file; the rule's names (wildcards, input, output, params) are that
function's keyword arguments; and the functions stay glue (short)."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from snakemake.iocontainers import InputFiles, OutputFiles, Params, Wildcards
from workflow_runs import ROOT

from stragglers.rules import RULES, rule_arguments, rule_function

RULES_DIR = ROOT / "workflow" / "rules"
SECTION = re.compile(r"^    (\w+):", re.MULTILINE)
NAME = re.compile(r"^        (\w+)=", re.MULTILINE)
WILDCARD = re.compile(r"(?<!\{)\{(\w+)\}(?!\})")


def script_rules() -> list[tuple[str, str, str]]:
    """(.smk stem, rule name, rule text) of every rule that runs a script."""
    found = []
    for smk in sorted(RULES_DIR.glob("*.smk")):
        blocks = re.split(r"^rule (\w+):\n", smk.read_text(), flags=re.MULTILINE)
        for name, text in zip(blocks[1::2], blocks[2::2]):
            text = re.split(r"^\S", text, maxsplit=1, flags=re.MULTILINE)[0]
            if "    script:" in text:
                found.append((smk.stem, name, text))
    return found


def sections(text: str) -> dict[str, str]:
    parts = SECTION.split(text)
    return dict(zip(parts[1::2], parts[2::2]))


def test_every_script_is_the_one_line_and_every_rule_runs_it():
    for script in (ROOT / "scripts").glob("*.py"):
        code = [
            line
            for line in script.read_text().splitlines()
            if line.strip() and not line.startswith(("#", '"""', "from", "import"))
        ]
        assert len(code) <= 6, f"{script}: more than a rule's one call"
    rules = script_rules()
    assert len(rules) >= 38
    for stem, name, text in rules:
        assert '"../../scripts/run.py"' in text, f"rule {name} ({stem}.smk) runs another script"


@pytest.mark.parametrize("stem, name, text", script_rules(), ids=lambda v: str(v)[:40])
def test_the_rules_names_are_its_functions_arguments(stem, name, text):
    function = rule_function(name)
    assert function.__module__ == f"stragglers.rules.{stem}"
    assert function.__name__ == name
    parts = sections(text)
    names = {n for part in ("input", "output", "params") for n in NAME.findall(parts.get(part, ""))}
    # an output's wildcards (a pattern inside expand() is filled in, not a wildcard)
    patterns = re.sub(r"expand\([^)]*\)", "", parts.get("output", ""), flags=re.DOTALL)
    names |= set(WILDCARD.findall(patterns))
    signature = inspect.signature(function).parameters.values()
    accepted = {p.name for p in signature if p.kind is p.KEYWORD_ONLY}
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature)
    unpacked = "unpack(" in parts.get("input", "")
    missing = names - accepted
    assert takes_any or not missing, f"rule {name}: {sorted(missing)} not arguments of {function}"
    required = {p.name for p in signature if p.kind is p.KEYWORD_ONLY and p.default is p.empty}
    unknown = required - names
    assert unpacked or not unknown, f"rule {name}: {function} also requires {sorted(unknown)}"


def snakemake_object(unnamed_output: str | None = None, **parts) -> SimpleNamespace:
    """What Snakemake's script directive gives the script as `snakemake`, for rule r."""
    lists = {"wildcards": Wildcards, "input": InputFiles, "output": OutputFiles, "params": Params}
    made = {part: kind(fromdict=parts.get(part) or {}) for part, kind in lists.items()}
    if unnamed_output:
        made["output"].append(unnamed_output)
    return SimpleNamespace(rule="r", **made)


def test_arguments_are_the_names_of_every_part():
    job = snakemake_object(
        wildcards={"dataset": "d"},
        input={"manifest": "m.parquet", "tasks": ["a.parquet", "b.parquet"]},
        output={"csv": "t.csv"},
        params={"seed": 3, "replay": {"checkpoint_interval": 60}},
    )
    assert rule_arguments(job) == {
        "dataset": "d",
        "manifest": "m.parquet",
        "tasks": ["a.parquet", "b.parquet"],
        "csv": "t.csv",
        "seed": 3,
        "replay": {"checkpoint_interval": 60},
    }


def test_a_name_used_twice_or_an_unnamed_item_is_an_error_naming_the_rule():
    twice = snakemake_object(input={"jobs": "a"}, output={"jobs": "b"})
    with pytest.raises(ValueError, match="rule r: 'jobs' names both one of its input and one"):
        rule_arguments(twice)
    unnamed = snakemake_object(unnamed_output="results/x.csv")
    with pytest.raises(ValueError, match="rule r: every output item needs a name"):
        rule_arguments(unnamed)


def test_the_table_holds_exactly_the_rules_that_run_the_script():
    in_workflow = [name for _, name, _ in script_rules()]
    assert len(in_workflow) == len(set(in_workflow)), "a rule name defined twice"
    missing = sorted(set(in_workflow) - set(RULES))
    extra = sorted(set(RULES) - set(in_workflow))
    assert not missing, f"rules without an entry in stragglers.rules.RULES: {missing}"
    assert not extra, f"stragglers.rules.RULES entries no .smk rule runs: {extra}"


def test_a_rule_missing_from_the_table_is_named():
    with pytest.raises(LookupError, match="rule nowhere: not in stragglers.rules.RULES"):
        rule_function("nowhere")


def test_the_table_imports_a_rule_module_only_when_its_rule_runs():
    """Each job pays the start-up of its own rule's module only."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, stragglers.rules as r; r.rule_function('convert_part'); "
            "print(sorted(m for m in sys.modules if m.startswith('stragglers.rules.')))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert loaded.strip() == "['stragglers.rules.data']"


# the rule functions are glue: read the arguments, call a stage function, write the outputs.
# A body (the statements after the docstring; the signature is the .smk's names) longer than
# this is work that belongs in its stage.
MAX_BODY_LINES = 30


def long_functions(path: Path, limit: int) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body[1:] if ast.get_docstring(node) else node.body
            lines = node.end_lineno - body[0].lineno + 1
            if lines > limit:
                found.append(f"{path.name}: {node.name} ({lines} lines)")
    return found


def test_rule_functions_are_short():
    modules = sorted((ROOT / "stragglers" / "rules").glob("*.py"))
    assert {"simulate.py", "predict.py"} <= {m.name for m in modules}
    found = [line for path in modules for line in long_functions(path, MAX_BODY_LINES)]
    assert not found, f"rule module functions longer than {MAX_BODY_LINES} lines: {found}"


def test_the_length_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(31))
    long = tmp_path / "long.py"
    long.write_text(f'def f():\n    """Doc."""\n{body}\n\n\ndef g():\n    return 1\n')
    assert long_functions(long, MAX_BODY_LINES) == ["long.py: f (31 lines)"]
