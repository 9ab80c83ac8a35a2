"""Convert: raw trace parts -> one Parquet file per job plus a manifest.

`layout` plans the scatter-gather conversion Snakemake runs (prepare, spill per group of
parts, gather per shard, manifest); `google`, `google_events` and `alibaba` are the
converters; `machines` the machine state; `common` what they share; `registry` the converter
of each dataset kind.
"""
