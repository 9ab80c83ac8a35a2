"""Simulate: job completion time when flagged tasks are mitigated.

`jct` is the paper's Algorithms 2-3 (relaunch at the flag); `policies` adds speculative copies,
speculative resume and deadlines. The flat names below are `jct`'s.
"""

import importlib

# the flat names of `jct`, loaded on first use (PEP 562) so that importing a sibling module
# (the workflow imports the audit's variants when it loads) does not import jct's libraries
__all__ = [
    "DEFAULT_MACHINES",
    "CHECKPOINT_INTERVAL",
    "GRID_TOLERANCE",
    "ALGORITHM_UNLIMITED",
    "ALGORITHM_LIMITED",
    "RESULT_COLUMNS",
    "replacement_uniforms",
    "replacement_durations",
    "job_completion_time",
    "jct_reduction",
    "mitigated_jct_unlimited",
    "mitigated_jct_limited",
    "simulate_unlimited",
    "simulate_limited",
    "simulate_job",
]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("stragglers.simulate.jct"), name)
    raise AttributeError(f"module 'stragglers.simulate' has no attribute {name!r}")
