"""Evaluate: per-task flags against the job's straggler threshold.

`metrics` scores predictions (TPR, FPR, F1 per job, F1 over time, cost); `timing` says how
early the flags came (early-F1, lead). The flat names below are `metrics`'.
"""

import importlib
import importlib.util

# the flat API: every public name of metrics, loaded on first use (PEP 562), so that importing
# one submodule (the workflow loads some when it reads the rules) imports no more than it needs
_FLAT_MODULES = ("metrics",)


def __getattr__(name: str):
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a submodule, not a flat name
    if not name.startswith("_"):
        for module in _FLAT_MODULES:
            found = importlib.import_module(f"stragglers.evaluate.{module}")
            if name in vars(found):
                return vars(found)[name]
    raise AttributeError(f"module 'stragglers.evaluate' has no attribute {name!r}")
