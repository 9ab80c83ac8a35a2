"""Simulate: job completion time when flagged tasks are mitigated.

`jct` is the paper's Algorithms 2-3 (relaunch at the flag); `policies` adds speculative copies,
speculative resume and deadlines. The flat names below are `jct`'s.
"""

import importlib
import importlib.util

# the flat API: every public name of jct, loaded on first use (PEP 562), so that importing
# one submodule (the workflow loads some when it reads the rules) imports no more than it needs
_FLAT_MODULES = ("jct",)


def __getattr__(name: str):
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a submodule, not a flat name
    if not name.startswith("_"):
        for module in _FLAT_MODULES:
            found = importlib.import_module(f"stragglers.simulate.{module}")
            if name in vars(found):
                return vars(found)[name]
    raise AttributeError(f"module 'stragglers.simulate' has no attribute {name!r}")
