"""Evaluate: per-task flags against the job's straggler threshold.

`metrics` scores predictions (TPR, FPR, F1 per job, F1 over time, cost); `timing` says how
early the flags came (early-F1, lead). The flat names below are `metrics`'.
"""

import importlib

# the flat names of `metrics`, loaded on first use (PEP 562) so that importing a sibling module
# (the workflow imports the audit's variants when it loads) does not import metrics's libraries
__all__ = [
    "JOB_STATUSES",
    "FAMILY_ORDER",
    "REFERENCE_FAMILY",
    "PAPER_METHOD_ORDER",
    "normalise_method_name",
    "family_rank",
    "method_sort_key",
    "sort_rows",
    "confusion",
    "rates",
    "validate_predictions",
    "load_predictions",
    "METRIC_COLUMNS",
    "COUNT_COLUMNS",
    "job_metrics",
    "summary_table",
    "f1_over_time",
    "cost_table",
]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("stragglers.evaluate.metrics"), name)
    raise AttributeError(f"module 'stragglers.evaluate' has no attribute {name!r}")
