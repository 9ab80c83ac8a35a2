"""Convert: raw trace parts -> one Parquet file per job plus a manifest.

`layout` plans the scatter-gather conversion Snakemake runs (prepare, spill per group of
parts, gather per shard, manifest); `google`, `google_events` and `alibaba` are the
converters; `machines` the machine state; `common` what they share; `gather` one shard's job files, any
kind; `one_process` each kind's whole conversion in one process.
"""

import importlib
import importlib.util

# the flat API: every public name of the converters, loaded on first use (PEP 562), so that importing
# one submodule (the workflow loads some when it reads the rules) imports no more than it needs
_FLAT_MODULES = ("common", "google", "google_events", "alibaba", "gather", "one_process")


def __getattr__(name: str):
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a submodule, not a flat name
    if not name.startswith("_"):
        for module in _FLAT_MODULES:
            found = importlib.import_module(f"stragglers.convert.{module}")
            if name in vars(found):
                return vars(found)[name]
    raise AttributeError(f"module 'stragglers.convert' has no attribute {name!r}")
