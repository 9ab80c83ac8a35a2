"""Convert: raw trace parts -> one Parquet file per job plus a manifest.

`layout` plans the scatter-gather conversion Snakemake runs (prepare, spill per group of
parts, gather per shard, manifest); `google`, `google_events` and `alibaba` are the
converters; `machines` the machine state; `common` what they share; `gather` one shard's job
files, any kind; `one_process` each kind's whole conversion in one process. Import each name
from the module that defines it (docs/layout.md).
"""
