"""Rules: each Snakemake rule's entry point, one module per workflow/rules/*.smk file, one
function per rule, named as the rule. A rule's wildcards, input, output and params names are
its function's keyword arguments; scripts/run.py, every rule's `script:`, calls it through
`run`, which finds it in the table RULES (docs/layout.md). The functions are glue: they read
their arguments, call their stage (the work stays there) and write the outputs, taking plain
paths and values, so they can be tested without Snakemake.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RuleFunction = Callable[..., Any]

# One importer per module: a job imports only its own rule's module (a conversion job then
# skips the pandas and matplotlib the report rules load).


def _data():
    from stragglers.rules import data

    return data


def _predict():
    from stragglers.rules import predict

    return predict


def _evaluate():
    from stragglers.rules import evaluate

    return evaluate


def _simulate():
    from stragglers.rules import simulate

    return simulate


def _report():
    from stragglers.rules import report

    return report


def _audit():
    from stragglers.rules import audit

    return audit


def _fingerprint():
    from stragglers.rules import fingerprint

    return fingerprint


def _launch():
    from stragglers.rules import launch

    return launch


def _sensitivity():
    from stragglers.rules import sensitivity

    return sensitivity


def _calibrate():
    from stragglers.rules import calibrate

    return calibrate


# Every rule that runs scripts/run.py -> its function, by .smk file (tests/test_rules.py checks
# that these are exactly the rules of workflow/rules/*.smk that run it).
RULES: dict[str, Callable[[], RuleFunction]] = {
    # workflow/rules/data.smk
    "generate_trace": lambda: _data().generate_trace,
    "verify_local_trace": lambda: _data().verify_local_trace,
    "download_checksums": lambda: _data().download_checksums,
    "download_file": lambda: _data().download_file,
    "download_trace": lambda: _data().download_trace,
    "convert_prepare": lambda: _data().convert_prepare,
    "convert_part": lambda: _data().convert_part,
    "gather_shard": lambda: _data().gather_shard,
    "convert_manifest": lambda: _data().convert_manifest,
    # workflow/rules/predict.smk
    "predict": lambda: _predict().predict,
    "tune_method": lambda: _predict().tune_method,
    # workflow/rules/evaluate.smk
    "evaluate_dataset": lambda: _evaluate().evaluate_dataset,
    "paired_comparisons": lambda: _evaluate().paired_comparisons,
    "table3": lambda: _evaluate().table3,
    "cost_table": lambda: _evaluate().cost_table,
    # workflow/rules/simulate.smk
    "simulate_method": lambda: _simulate().simulate_method,
    "simulation_report": lambda: _simulate().simulation_report,
    "completion_time_table": lambda: _simulate().completion_time_table,
    "policies_report": lambda: _simulate().policies_report,
    "policies_table": lambda: _simulate().policies_table,
    # workflow/rules/report.smk
    "results_index": lambda: _report().results_index,
    "findings": lambda: _report().findings,
    "overview": lambda: _report().overview,
    # workflow/rules/audit.smk
    "audit_variant": lambda: _audit().audit_variant,
    "audit_table": lambda: _audit().audit_table,
    # workflow/rules/fingerprint.smk
    "fingerprint_table": lambda: _fingerprint().fingerprint_table,
    "fingerprint_replay": lambda: _fingerprint().fingerprint_replay,
    "fingerprint_paper_table": lambda: _fingerprint().fingerprint_paper_table,
    # workflow/rules/launch.smk
    "launch_predict": lambda: _launch().launch_predict,
    "launch_tables": lambda: _launch().launch_tables,
    # workflow/rules/sensitivity.smk
    "predictability": lambda: _sensitivity().predictability,
    "sensitivity_paper": lambda: _sensitivity().sensitivity_paper,
    "sensitivity_table": lambda: _sensitivity().sensitivity_table,
    "replicate_table": lambda: _sensitivity().replicate_table,
    # workflow/rules/calibrate.smk
    "calibration_propose": lambda: _calibrate().calibration_propose,
    "calibration_trial": lambda: _calibrate().calibration_trial,
    "calibration_tell": lambda: _calibrate().calibration_tell,
    "calibration_tables": lambda: _calibrate().calibration_tables,
    "calibration_check": lambda: _calibrate().calibration_check,
    "calibration_check_table": lambda: _calibrate().calibration_check_table,
}


def rule_function(rule: str) -> RuleFunction:
    """The function of `rule` (RULES), its module imported now."""
    if rule not in RULES:
        raise LookupError(
            f"rule {rule}: not in stragglers.rules.RULES, the table of the rules that run "
            "scripts/run.py; add it there, with its function in stragglers/rules/<its .smk "
            "file's name>.py"
        )
    return RULES[rule]()


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

    function = rule_function(snakemake.rule)
    return run_rule(snakemake.log[0], lambda: function(**rule_arguments(snakemake)))
