"""Convert: raw trace parts -> one Parquet file per job plus a manifest.

`layout` plans the scatter-gather conversion Snakemake runs (prepare, spill per group of
parts, gather per shard, manifest); `google`, `google_events` and `alibaba` are the
converters; `machines` the machine state; `common` what they share; `registry` the converter
of each dataset kind.
"""

import importlib

# the converters' public names, loaded on first use (PEP 562): the workflow imports
# `layout` when it loads, and that must not import pandas or pyarrow
_FLAT = {
    "PRODUCTION_PRIORITIES": "common",
    "US": "common",
    "WRITER_THREADS": "common",
    "ConversionReport": "common",
    "ShardSpill": "common",
    "list_parts": "common",
    "optional_parts": "common",
    "TASKS_FILE": "common",
    "EVENT_KEYS_FILE": "common",
    "LOOKUP_FILE": "common",
    "REPORT_FILE": "common",
    "read_report": "common",
    "merge_reports": "common",
    "write_manifest": "common",
    "stable_shard": "common",
    "MACHINE_STATE_FILE": "common",
    "ALIBABA_FEATURES": "common",
    "ALIBABA_NUMERIC": "common",
    "AlibabaLayout": "common",
    "ALIBABA_LAYOUTS": "common",
    "GOOGLE_LAUNCH_COLUMNS": "common",
    "TASK_EVENT_TYPES": "google",
    "USAGE_TYPES": "google",
    "USAGE_FEATURES": "google",
    "REQUIRED_EVENT_FIELDS": "google",
    "read_task_events": "google",
    "production_events": "google",
    "task_outcomes": "google",
    "select_google_tasks": "google",
    "machine_names": "google",
    "eviction_and_failure_keys": "google",
    "counts_before": "google",
    "LAUNCH_MACHINE_CODE": "google",
    "TASK_FILE_COLUMNS": "google",
    "TIMELINE_FILE": "google",
    "MACHINE_CODE_COLUMN": "google",
    "machine_timeline": "google",
    "add_workload": "google",
    "add_launch_state": "google",
    "prepare_google": "google",
    "spill_google_usage": "google",
    "read_spilled_shard": "google",
    "add_machine_usage": "google",
    "LATENCY_DEFINITIONS": "google",
    "check_latency_definition": "google",
    "google_task_table": "google",
    "EVENTS_TYPES": "google",
    "read_all_events": "google",
    "event_windows": "google_events",
    "spill_google_events": "google_events",
    "ALIBABA_MACHINE_LAYOUTS": "alibaba",
    "alibaba_table_present": "alibaba",
    "alibaba_chunks": "alibaba",
    "spill_alibaba": "alibaba",
    "task_family": "alibaba",
    "gather_shard": "gather",
    "convert_google": "one_process",
    "convert_alibaba": "one_process",
    "convert_google_events": "one_process",
    "CONVERTERS": "one_process",
}
__all__ = list(_FLAT)


def __getattr__(name: str):
    if name in _FLAT:
        return getattr(importlib.import_module(f"stragglers.convert.{_FLAT[name]}"), name)
    raise AttributeError(f"module 'stragglers.convert' has no attribute {name!r}")
