"""Report: tables, figures and the reproduction audit.

`tables` writes Table 3, the completion-time and policy tables and every figure; `audit` runs
and reports the ladder from the paper's protocol to ours. The flat names below are `tables`'.
"""

import importlib
import importlib.util

# the flat API: every public name of tables, loaded on first use (PEP 562), so that importing
# one submodule (the workflow loads some when it reads the rules) imports no more than it needs
_FLAT_MODULES = ("tables",)


def __getattr__(name: str):
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a submodule, not a flat name
    if not name.startswith("_"):
        for module in _FLAT_MODULES:
            found = importlib.import_module(f"stragglers.report.{module}")
            if name in vars(found):
                return vars(found)[name]
    raise AttributeError(f"module 'stragglers.report' has no attribute {name!r}")
