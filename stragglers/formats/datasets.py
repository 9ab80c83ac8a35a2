"""What each dataset's converted jobs look like: feature columns and how they aggregate.

A converted job is one Parquet file whose rows are measurement windows of its tasks
(see `stragglers.formats.jobs`). A running task's feature vector at a checkpoint is built only
from windows that became available by then; `mean` features are averaged over those windows
weighted by window duration, `last` features take the value of the latest available window
(used for running counts such as evictions so far).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Feature:
    column: str  # column in the converted job file
    paper_name: str  # the abbreviation in the paper's Table 1 / Table 2
    aggregation: str  # "mean" (duration-weighted) or "last"


GOOGLE_FEATURES = (
    Feature("cpu_rate", "MCU", "mean"),
    Feature("maximum_cpu_rate", "MAXCPU", "mean"),
    Feature("sampled_cpu_usage", "SCPU", "mean"),
    Feature("canonical_memory_usage", "CMU", "mean"),
    Feature("assigned_memory_usage", "AMU", "mean"),
    Feature("maximum_memory_usage", "MAXMU", "mean"),
    Feature("unmapped_page_cache", "UPC", "mean"),
    Feature("total_page_cache", "TPC", "mean"),
    Feature("disk_io_time", "MIO", "mean"),
    Feature("maximum_disk_io_time", "MAXIO", "mean"),
    Feature("local_disk_space_usage", "MDK", "mean"),
    Feature("cycles_per_instruction", "CPI", "mean"),
    Feature("memory_accesses_per_instruction", "MAI", "mean"),
    Feature("evictions_so_far", "EV", "last"),
    Feature("failures_so_far", "FL", "last"),
)

ALIBABA_FEATURES = (
    Feature("cpu_avg", "cpu_avg", "mean"),
    Feature("cpu_max", "cpu_max", "mean"),
    Feature("mem_avg", "mem_avg", "mean"),
    Feature("mem_max", "mem_max", "mean"),
)

# Google from task_events alone (no task_usage): scheduling-side features per 300 s window.
GOOGLE_EVENTS_FEATURES = (
    Feature("cpu_request", "CPU request", "mean"),
    Feature("memory_request", "memory request", "mean"),
    Feature("disk_space_request", "disk request", "mean"),
    Feature("priority", "priority", "mean"),
    Feature("scheduling_class", "scheduling class", "mean"),
    Feature("machine_load", "tasks running on the machine", "mean"),
    Feature("evictions_so_far", "EV", "last"),
    Feature("failures_so_far", "FL", "last"),
)

# The reference script's input layout (code/run_ts.py of y-ding/nurd-mlsys22-code): one
# headerless 22-column CSV per task, its columns below; the script trains on SCRIPT_ORDER.
# Our columns' places in it (Alibaba's four usage columns go to the matching Google ones;
# bench/reference_script.py writes the layout, stragglers.replay.aligned.script_column_order uses
# the order).
SCRIPT_LAYOUT = (
    "ST",
    "ET",
    "JI",
    "TI",
    "MI",
    "MCU",
    "CMU",
    "AMU",
    "UPC",
    "TPC",
    "MAXMU",
    "MIO",
    "MDK",
    "MAXCPU",
    "MAXIO",
    "CPI",
    "MAI",
    "SP",
    "AT",
    "SCPU",
    "EV",
    "FL",
)
SCRIPT_ORDER = (
    "MCU",
    "CMU",
    "AMU",
    "UPC",
    "TPC",
    "MAXMU",
    "MIO",
    "MDK",
    "MAXCPU",
    "MAXIO",
    "CPI",
    "MAI",
    "SCPU",
    "EV",
    "FL",
)
SCRIPT_COLUMNS = {
    **{f.column: f.paper_name for f in GOOGLE_FEATURES},
    "cpu_avg": "MCU",
    "mem_avg": "CMU",
    "mem_max": "MAXMU",
    "cpu_max": "MAXCPU",
}

# dataset kind -> features; a dataset in the config names its kind.
FEATURES_BY_KIND = {
    "google-2011": GOOGLE_FEATURES,
    "google-2011-events": GOOGLE_EVENTS_FEATURES,
    "alibaba-2018": ALIBABA_FEATURES,
    "alibaba-2017": ALIBABA_FEATURES,
}

# Kinds converted from a task table (stragglers/formats/tasks_table.py): their features are
# the table's own columns (request_*, the usage measurements or the machine load, then EV and
# FL), so they are known only once converted: the manifest's metadata lists them.
# spark-eventlog: Spark event logs, read into a task table first (stragglers/convert/spark_eventlog.py);
# nurd-timeseries: the NURD authors' per-task files, likewise (stragglers/convert/nurd_timeseries.py)
TASK_TABLE_KINDS = ("tasks-table", "spark-eventlog", "nurd-timeseries")
EVICTIONS_SO_FAR = "evictions_so_far"
FAILURES_SO_FAR = "failures_so_far"
MACHINE_LOAD = "machine_load"
FEATURES_METADATA_KEY = b"stragglers.features"
# every conversion records its dataset kind in the manifest's metadata, so that a converted
# folder can be read without being told what it holds (python -m stragglers.replay.predictability)
KIND_METADATA_KEY = b"stragglers.kind"


def task_table_features(columns: list[str]) -> tuple[Feature, ...]:
    """A task table's feature columns -> Features: EV and FL take the latest window's value
    (counts so far), every other column the duration-weighted mean."""
    names = {EVICTIONS_SO_FAR: "EV", FAILURES_SO_FAR: "FL"}
    return tuple(Feature(c, names.get(c, c), "last" if c in names else "mean") for c in columns)


def dataset_features(kind: str, converted_dir=None) -> tuple[Feature, ...]:
    """The features of a dataset of `kind`: the kind's own, or for a task-table kind those
    its conversion wrote into the manifest of `converted_dir`."""
    if kind in FEATURES_BY_KIND:
        return FEATURES_BY_KIND[kind]
    if kind not in TASK_TABLE_KINDS:
        raise ValueError(f"unknown dataset kind {kind!r}; known kinds: {known_kinds()}")
    if converted_dir is None:
        raise ValueError(
            f"dataset kind {kind!r}: its features are its task table's columns, read from "
            "its converted folder's manifest; none was given"
        )
    import json

    missing = (
        f"no feature list in its metadata (a {kind} conversion writes one); rebuild the conversion"
    )
    return task_table_features(
        json.loads(_manifest_metadata(converted_dir, FEATURES_METADATA_KEY, missing))
    )


def converted_kind(converted_dir) -> str:
    """The dataset kind a converted folder's manifest records (its conversion wrote it)."""
    missing = (
        "no dataset kind in its metadata (converted before conversions recorded it); "
        "rebuild the conversion or give the kind"
    )
    return _manifest_metadata(converted_dir, KIND_METADATA_KEY, missing).decode()


def _manifest_metadata(converted_dir, key: bytes, missing: str) -> bytes:
    """One entry of a converted folder's manifest metadata; its absence is an error naming
    the manifest (`missing` says what is missing and what to do)."""
    from pathlib import Path

    import pyarrow.parquet as pq

    path = Path(converted_dir) / "manifest.parquet"
    metadata = pq.read_schema(path).metadata or {}
    if key not in metadata:
        raise ValueError(f"{path}: {missing}")
    return metadata[key]


# dataset kind -> the trace of the paper's Table 3 whose rows it is compared with
PAPER_TRACE_OF_KIND = {
    "google-2011": "google",
    "nurd-timeseries": "google",  # the authors' own extraction of the Google trace
    "alibaba-2018": "alibaba",
}


def known_kinds() -> list[str]:
    return sorted([*FEATURES_BY_KIND, *TASK_TABLE_KINDS])


# The state of the machine a task runs on (stragglers.convert.machines: every job's attempts on it and
# the machine_events table), per window at the window's end, and per task just before it
# started (columns launch_<column>). Not task features: methods ask for them
# (Method.uses_machine_state) and Table 3's methods keep the paper's feature sets.
GOOGLE_MACHINE_STATE = (
    Feature("machine_running_tasks", "tasks running on the machine", "last"),
    Feature("machine_cpu_requested", "their summed CPU requests", "last"),
    Feature("machine_memory_requested", "their summed memory requests", "last"),
    Feature("machine_evictions_so_far", "evictions on the machine so far", "last"),
    Feature("machine_failures_so_far", "failures on the machine so far", "last"),
    Feature("machine_cpu_capacity", "machine CPUs (machine_events)", "last"),
    Feature("machine_memory_capacity", "machine memory (machine_events)", "last"),
)

# Alibaba 2018: every instance of every job on the machine, machine_usage and machine_meta,
# on the checkpoint grid (stragglers.convert.machines.BinnedMachineState)
ALIBABA_MACHINE_STATE = (
    Feature("machine_running_instances", "instances running on the machine", "last"),
    Feature("machine_failed_instances_so_far", "Failed instances on the machine so far", "last"),
    Feature("machine_cpu_util_percent", "machine CPU utilisation (machine_usage)", "last"),
    Feature("machine_mem_util_percent", "machine memory utilisation (machine_usage)", "last"),
    Feature("machine_mem_gps", "machine memory bandwidth (machine_usage)", "last"),
    Feature("machine_mkpi", "machine cache misses per kilo-instruction (machine_usage)", "last"),
    Feature("machine_net_in", "machine network in (machine_usage)", "last"),
    Feature("machine_net_out", "machine network out (machine_usage)", "last"),
    Feature("machine_disk_io_percent", "machine disk I/O (machine_usage)", "last"),
    Feature("machine_cpu_num", "machine cores (machine_meta)", "last"),
    Feature("machine_mem_size", "machine memory (machine_meta)", "last"),
)

# Google with task_usage: what every task on the machine used over the last complete 5-minute
# period (stragglers.convert.machines.MachineUsageLookup); sums are time-averaged machine totals
GOOGLE_MACHINE_USAGE = (
    Feature("machine_usage_tasks", "tasks reporting usage on the machine", "last"),
    Feature("machine_cpu_rate_sum", "their summed CPU rate", "last"),
    Feature("machine_canonical_memory_usage_sum", "their summed canonical memory", "last"),
    Feature("machine_disk_io_time_sum", "their summed disk I/O time", "last"),
    Feature("machine_local_disk_space_usage_sum", "their summed local disk space", "last"),
    Feature("machine_cpu_rate_mean", "their mean CPU rate", "last"),
    Feature("machine_canonical_memory_usage_mean", "their mean canonical memory", "last"),
    Feature("machine_disk_io_time_mean", "their mean disk I/O time", "last"),
    Feature("machine_local_disk_space_usage_mean", "their mean local disk space", "last"),
)

# The MTL paper's five counter categories (its §3.1: CPU, network, disk, memory, other system
# counters), for the mixed norms that select features by category (MTL-ffs1 / ffs2). Only
# Alibaba 2018's machine_usage measures the network; counts of tasks, evictions and failures
# are "system"; cache misses (mkpi) count as memory, as the paper's cache-space counters.
FEATURE_CATEGORIES = ("cpu", "memory", "disk", "network", "system")
MACHINE_FEATURE_CATEGORY = {
    "machine_running_tasks": "system",
    "machine_cpu_requested": "cpu",
    "machine_memory_requested": "memory",
    "machine_evictions_so_far": "system",
    "machine_failures_so_far": "system",
    "machine_cpu_capacity": "cpu",
    "machine_memory_capacity": "memory",
    "machine_usage_tasks": "system",
    "machine_cpu_rate_sum": "cpu",
    "machine_canonical_memory_usage_sum": "memory",
    "machine_disk_io_time_sum": "disk",
    "machine_local_disk_space_usage_sum": "disk",
    "machine_cpu_rate_mean": "cpu",
    "machine_canonical_memory_usage_mean": "memory",
    "machine_disk_io_time_mean": "disk",
    "machine_local_disk_space_usage_mean": "disk",
    "machine_running_instances": "system",
    "machine_failed_instances_so_far": "system",
    "machine_cpu_util_percent": "cpu",
    "machine_mem_util_percent": "memory",
    "machine_mem_gps": "memory",
    "machine_mkpi": "memory",
    "machine_net_in": "network",
    "machine_net_out": "network",
    "machine_disk_io_percent": "disk",
    "machine_cpu_num": "cpu",
    "machine_mem_size": "memory",
}


def machine_feature_category(column: str) -> str:
    """The category of a machine-state column or of its launch_ copy."""
    name = column.removeprefix("launch_")
    if name not in MACHINE_FEATURE_CATEGORY:
        raise ValueError(
            f"machine column {column!r} has no feature category (stragglers.formats.datasets.MACHINE_FEATURE_CATEGORY)"
        )
    return MACHINE_FEATURE_CATEGORY[name]


MACHINE_STATE_BY_KIND = {
    "google-2011": GOOGLE_MACHINE_STATE + GOOGLE_MACHINE_USAGE,
    "google-2011-events": GOOGLE_MACHINE_STATE,
    "alibaba-2018": ALIBABA_MACHINE_STATE,
    "alibaba-2017": (),  # the 2017 trace's machine tables are not converted
    **{kind: () for kind in TASK_TABLE_KINDS},  # a task table has no machine table
}


def machine_state_columns(kind: str) -> list[str]:
    if kind not in MACHINE_STATE_BY_KIND:
        raise ValueError(f"unknown dataset kind {kind!r}; known kinds: {known_kinds()}")
    return [f.column for f in MACHINE_STATE_BY_KIND[kind]]


def feature_columns(kind: str, converted_dir=None) -> list[str]:
    """`converted_dir`: needed for a task-table kind (see `dataset_features`)."""
    return [f.column for f in dataset_features(kind, converted_dir)]


def last_columns(kind: str, converted_dir=None) -> np.ndarray:
    return np.array([f.aggregation == "last" for f in dataset_features(kind, converted_dir)])
