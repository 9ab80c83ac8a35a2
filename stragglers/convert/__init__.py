"""Convert: raw trace parts -> one Parquet file per job plus a manifest.

`layout` plans the scatter-gather conversion Snakemake runs (prepare, spill per group of
parts, gather per shard, manifest); `google`, `google_events` and `alibaba` are the
converters; `machines` the machine state; `common` what they share; `gather` one shard's job files, any
kind; `one_process` each kind's whole conversion in one process.
"""

from stragglers import flat_api

# the flat API: every public name of these modules, loaded on first use
__getattr__ = flat_api(
    __name__,
    ("common", "google", "google_events", "alibaba", "gather", "one_process", "tasks_table"),
)
