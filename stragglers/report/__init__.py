"""Report: tables, figures and the reproduction audit.

`tables` writes Table 3, the completion-time and policy tables and every figure; `audit` runs
and reports the ladder from the paper's protocol to ours. The flat names below are `tables`'.
"""

import importlib

# the flat names of `tables`, loaded on first use (PEP 562) so that importing a sibling module
# (the workflow imports the audit's variants when it loads) does not import tables's libraries
__all__ = [
    "TABLE3_METRICS",
    "JOB_COUNTS",
    "PAPER_TABLE3_COLUMNS",
    "SIMULATION_COLUMNS",
    "ALGORITHMS",
    "PRIVILEGED_MARK",
    "MISSING",
    "markdown_table",
    "write_table",
    "read_paper_table3",
    "TIMING_DISPLAY",
    "table3_long",
    "write_table3",
    "plot_f1_over_time",
    "plot_lead_distribution",
    "simulation_tables",
    "reduction_by_method",
    "plot_reduction_bars",
    "plot_reduction_by_machines",
]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("stragglers.report.tables"), name)
    raise AttributeError(f"module 'stragglers.report' has no attribute {name!r}")
