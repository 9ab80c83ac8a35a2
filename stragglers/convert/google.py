"""Google clusterdata-2011-2 -> per-job files: which tasks are kept (production priorities,
last event), their latency (FINISH - first SCHEDULE) and their usage windows. The rules are in
docs/definitions.md ("Conversion (Google clusterdata-2011-2)"); the stages (prepare, spill per
group of parts, gather per shard) run as Snakemake jobs (stragglers/convert/layout.py) or in
one process (stragglers/convert/one_process.py). Every stage writes under `<out>.tmp` and
renames it when complete, so an interrupted conversion never looks complete.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from stragglers.convert import machines
from stragglers.convert.common import (
    EVENT_KEYS_FILE,
    GOOGLE_LAUNCH_COLUMNS,
    LOOKUP_FILE,
    REPORT_FILE,
    TASKS_FILE,
    US,
    ConversionReport,
    ShardSpill,
    _assign_shards,
    _AtomicFolder,
    _write_report,
)
from stragglers.formats import raw as schema
from stragglers.formats.dataset_spec import (
    LATENCY_DEFINITIONS,
    MIN_TASKS,
    PRODUCTION_PRIORITIES,
)
from stragglers.formats.datasets import GOOGLE_FEATURES
from stragglers.traces.rawcsv import iter_csv_chunks

TASK_EVENT_TYPES = {
    "timestamp": "int",
    "job_id": "int",
    "task_index": "int",
    "machine_id": "int",
    "event_type": "int",
    "priority": "int",
}


USAGE_TYPES = {c: "float" for c in schema.GOOGLE_TASK_USAGE} | {
    "start_time": "int",
    "end_time": "int",
    "job_id": "int",
    "task_index": "int",
    "machine_id": "int",
}


# the usage columns behind the paper's Table 1 (EV/FL come from task_events)
USAGE_FEATURES = [f.column for f in GOOGLE_FEATURES if f.column in schema.GOOGLE_TASK_USAGE]


# ---------------------------------------------------------------------------------------------
# Google: task events -> per-task outcome
# ---------------------------------------------------------------------------------------------
REQUIRED_EVENT_FIELDS = ["timestamp", "job_id", "task_index", "event_type"]


def read_task_events(
    parts: list[Path], report: ConversionReport, types: dict[str, str], chunk_filter=None
) -> pd.DataFrame:
    """Task events from every part (a job may span parts); rows missing a required field are
    skipped and counted; `chunk_filter` keeps part of each chunk (bounded memory)."""
    frames = []
    for part in parts:
        report.files_read.append(str(part))
        for chunk in iter_csv_chunks(
            part, schema.GOOGLE_TASK_EVENTS, types, usecols=list(types), skipped=report.skipped_rows
        ):
            missing = chunk[REQUIRED_EVENT_FIELDS].isna().any(axis=1)
            report.skipped_rows.add(
                part,
                None,
                "empty timestamp/job/task/event",
                "missing required field",
                n=int(missing.sum()),
            )
            chunk = chunk[~missing]
            frames.append(chunk_filter(chunk) if chunk_filter else chunk)
    events = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(types))
    for c in REQUIRED_EVENT_FIELDS:
        events[c] = events[c].astype(np.int64)
    return events


def production_events(
    events: pd.DataFrame, report: ConversionReport, priorities=PRODUCTION_PRIORITIES
) -> pd.DataFrame:
    """The production-priority rows of `events` (every priority, as read)."""
    production = events["priority"].isin(priorities).to_numpy()
    selected = events[production]
    other_jobs = np.setdiff1d(
        events.loc[~production, "job_id"].unique(), selected["job_id"].unique()
    )
    report.count("task_event_rows_production", len(selected))
    report.count("jobs_with_non_production_rows", len(other_jobs))
    return selected


def task_outcomes(events: pd.DataFrame) -> pd.DataFrame:
    """One row per (job_id, task_index): outcome, first schedule, finish, counts, machine.

    Vectorised over all events; the order of events at the same timestamp follows the file.
    """
    events = events.sort_values(["job_id", "task_index", "timestamp"], kind="stable")
    key = ["job_id", "task_index"]
    grouped = events.groupby(key, sort=True)
    last_event = grouped["event_type"].last()
    outcome = pd.Series("unresolved", index=last_event.index)
    outcome[last_event == schema.EventType.FINISH] = "finished"
    outcome[last_event.isin([schema.EventType.KILL, schema.EventType.LOST])] = "killed"

    schedules = events[events["event_type"] == schema.EventType.SCHEDULE]
    finishes = events[events["event_type"] == schema.EventType.FINISH]
    tasks = pd.DataFrame({"outcome": outcome})
    tasks["first_schedule"] = schedules.groupby(key)["timestamp"].min()
    tasks["finish"] = finishes.groupby(key)["timestamp"].max()
    # machine of the attempt that finished: the last SCHEDULE at or before the FINISH
    last_schedule = schedules.groupby(key).tail(1).set_index(key)
    tasks["machine_id"] = last_schedule["machine_id"]
    for name, code in (("evictions", schema.EventType.EVICT), ("failures", schema.EventType.FAIL)):
        rows = events[events["event_type"] == code]
        tasks[name] = rows.groupby(key).size()
    tasks[["evictions", "failures"]] = tasks[["evictions", "failures"]].fillna(0).astype(np.int64)
    no_schedule = tasks["first_schedule"].isna() & (tasks["outcome"] == "finished")
    tasks.loc[no_schedule, "outcome"] = "finished_without_schedule"
    bad = (tasks["outcome"] == "finished") & (tasks["finish"] <= tasks["first_schedule"])
    tasks.loc[bad, "outcome"] = "non_positive_latency"
    return tasks.reset_index()


def select_google_tasks(
    tasks: pd.DataFrame, min_tasks: int, report: ConversionReport
) -> pd.DataFrame:
    """Keep finished tasks of complete production jobs with at least `min_tasks` of them."""
    for outcome, n in tasks["outcome"].value_counts().items():
        report.count(f"tasks_{outcome}", n)
    unresolved_jobs = tasks.loc[tasks["outcome"] == "unresolved", "job_id"].unique()
    report.count("jobs_production_seen", tasks["job_id"].nunique())
    report.count("jobs_dropped_incomplete_in_selected_parts", len(unresolved_jobs))
    # events at timestamp 0 record tasks already running when the trace began: their true
    # start, hence their latency, is unknown (left-censored), so the job is dropped
    censored = tasks["first_schedule"] < schema.GOOGLE_TRACE_START_US
    censored_jobs = np.setdiff1d(tasks.loc[censored, "job_id"].unique(), unresolved_jobs)
    report.count("jobs_dropped_started_before_trace", len(censored_jobs))
    dropped = np.union1d(unresolved_jobs, censored_jobs)
    finished = tasks[(tasks["outcome"] == "finished") & ~tasks["job_id"].isin(dropped)]
    sizes = finished.groupby("job_id").size()
    small = sizes[sizes < min_tasks].index
    report.count("jobs_dropped_below_min_tasks", len(small))
    kept = finished[~finished["job_id"].isin(small)].copy()
    kept["first_schedule"] = kept["first_schedule"].astype(np.int64)
    kept["finish"] = kept["finish"].astype(np.int64)
    return kept.reset_index(drop=True)


def machine_names(machine_id: np.ndarray) -> np.ndarray:
    """Machine ids as strings ("" when missing), vectorised."""
    machine_id = machine_id.astype(float)
    missing = np.isnan(machine_id)
    names = np.where(missing, 0, machine_id).astype(np.int64).astype(str).astype(object)
    names[missing] = ""
    return names


def _trace_key(job_id: np.ndarray, task_index: np.ndarray) -> np.ndarray:
    """One int64 per (job id, task index); NaN (missing) becomes -1, matching nothing."""
    job = np.nan_to_num(job_id.astype(float), nan=-1).astype(np.int64)
    task = np.nan_to_num(task_index.astype(float), nan=-1).astype(np.int64)
    return np.where((job < 0) | (task < 0), -1, (job << 23) + task)


def _isin_sorted(values: np.ndarray, sorted_unique: np.ndarray) -> np.ndarray:
    if len(sorted_unique) == 0:
        return np.zeros(len(values), dtype=bool)
    position = np.minimum(np.searchsorted(sorted_unique, values), len(sorted_unique) - 1)
    return sorted_unique[position] == values


# one int64 per (task or machine, µs time): `machines.composite_key`
_composite = machines.composite_key


def eviction_and_failure_keys(events: pd.DataFrame) -> dict[str, np.ndarray]:
    """Sorted (task_key, time) composites of the EVICT and FAIL events, for `counts_before`."""
    return {
        name: np.sort(_composite(rows["task_key"].to_numpy(), rows["timestamp"].to_numpy()))
        for name, code in (
            ("evictions", schema.EventType.EVICT),
            ("failures", schema.EventType.FAIL),
        )
        for rows in [events[events["event_type"] == code]]
    }


def counts_before(event_keys: np.ndarray, task_key: np.ndarray, time_us: np.ndarray) -> np.ndarray:
    """Number of events of each task with timestamp <= time (event_keys sorted composites)."""
    upper = np.searchsorted(event_keys, _composite(task_key, time_us), side="right")
    lower = np.searchsorted(event_keys, _composite(task_key, np.zeros_like(time_us)), side="left")
    return upper - lower


# timeline code of a task's first machine (-1: unknown), for the launch-time machine usage
LAUNCH_MACHINE_CODE = "launch_machine_code"


# the per-task facts a gather needs (a row's position is its task_key)
TASK_FILE_COLUMNS = [
    "job_id",
    "task_index",
    "first_schedule",
    "finish",
    "machine_id",
    "evictions",
    "failures",
    "task_key",
    "shard",
    *machines.launch_columns(),
    "user",
    "scheduling_class",
    LAUNCH_MACHINE_CODE,
]


TIMELINE_FILE = "machine_timeline.npz"


# spilled window rows carry their machine's timeline code until the gather adds the usage
MACHINE_CODE_COLUMN = "machine_code"


def machine_timeline(
    events: pd.DataFrame, machine_event_parts: list[Path], report: ConversionReport
) -> machines.MachineTimeline:
    """Every job's events (sorted by job, task, time) and machine_events -> the timeline."""
    counts: dict[str, int] = {}
    horizon = int(events["timestamp"].max()) + 1 if len(events) else 0
    timeline = machines.build_timeline(
        events, machines.read_machine_events(machine_event_parts, report), horizon, counts
    )
    for name, n in counts.items():
        report.count(name, n)
    report.count("machines_seen", len(timeline.machines))
    return timeline


def add_workload(tasks: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Each task's user and scheduling class (first non-missing value on its rows): the
    workload attributes of its job (`workload_*` in the manifest)."""
    firsts = events.groupby(["job_id", "task_index"])[["user", "scheduling_class"]].first()
    joined = tasks.drop(columns=["user", "scheduling_class"], errors="ignore").join(
        firsts, on=["job_id", "task_index"]
    )
    joined["user"] = joined["user"].fillna("").astype(str)
    joined["scheduling_class"] = joined["scheduling_class"].astype(float)
    return joined


def add_launch_state(
    tasks: pd.DataFrame,
    events: pd.DataFrame,
    timeline: machines.MachineTimeline,
    report: ConversionReport,
) -> pd.DataFrame:
    """Each kept task's machine state just before its first SCHEDULE (launch_machine_*)."""
    machine = machines.first_schedule_machine(
        events, tasks["job_id"].to_numpy(), tasks["task_index"].to_numpy()
    )
    state = machines.launch_state(timeline, machine, tasks["first_schedule"].to_numpy())
    report.count("tasks_launch_machine_unknown", int(np.isnan(state[:, 0]).sum()))
    code, known = timeline.codes(machine)
    # the launch machine's code, for the machine usage the gather adds (-1: unknown)
    return tasks.assign(
        **dict(zip(machines.launch_columns(), state.T)),
        **{LAUNCH_MACHINE_CODE: np.where(known, code, -1)},
    )


def prepare_google(
    event_parts: list[Path],
    prepared_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = MIN_TASKS,
    priorities=PRODUCTION_PRIORITIES,
    machine_event_parts: list[Path] = (),
) -> dict[str, Any]:
    """Stage 1 (kind google-2011): the task events of every part (a job may span parts) ->
    `tasks.parquet` (kept tasks, their shard and their machine's state at launch),
    `event_keys.npz` (their evictions and failures up to FINISH), `trace_key_lookup.npz`
    ((job, task index) -> task_key, sorted), `machine_timeline.npz` (every job's attempts and
    the machine_events: `stragglers.convert.machines`) and `report.json`, written atomically."""
    report = ConversionReport(dataset)
    # every priority: a machine's load counts every task on it
    all_events = read_all_events(list(event_parts), report)
    timeline = machine_timeline(all_events, list(machine_event_parts), report)
    events = production_events(all_events, report, priorities)
    tasks = _assign_shards(select_google_tasks(task_outcomes(events), min_tasks, report), n_shards)
    tasks = add_launch_state(tasks, events, timeline, report)
    tasks = add_workload(tasks, events)
    del all_events
    ev = events.merge(
        tasks[["job_id", "task_index", "task_key", "finish"]], on=["job_id", "task_index"]
    )
    ev = ev[ev["timestamp"] <= ev["finish"]]
    event_keys = eviction_and_failure_keys(ev)
    del events, ev
    report.phase("task_events")
    # (job, task index) -> task_key lookup, sorted once here rather than in every part's job
    trace_keys = _trace_key(tasks["job_id"].to_numpy(), tasks["task_index"].to_numpy())
    key_order = np.argsort(trace_keys, kind="stable")
    with _AtomicFolder(prepared_dir) as staging:
        tasks[TASK_FILE_COLUMNS].to_parquet(staging / TASKS_FILE, index=False)
        np.savez(staging / EVENT_KEYS_FILE, **event_keys)
        np.savez(
            staging / LOOKUP_FILE, sorted_trace_keys=trace_keys[key_order], key_order=key_order
        )
        timeline.save(staging / TIMELINE_FILE)
        _write_report(staging / REPORT_FILE, report)
    return report.as_dict()


def spill_google_usage(
    usage_parts: list[Path], prepared_dir: Path | str, spill_dir: Path | str, *, dataset: str
) -> dict[str, Any]:
    """Stage 2 (kind google-2011): usage windows of the kept tasks in `usage_parts` -> one
    Arrow IPC file of window rows per shard in `spill_dir` (plus `report.json`)."""
    prepared_dir = Path(prepared_dir)
    report = ConversionReport(dataset)
    tasks = pd.read_parquet(
        prepared_dir / TASKS_FILE,
        columns=["job_id", "task_index", "first_schedule", "finish", "shard"],
    )
    with np.load(prepared_dir / EVENT_KEYS_FILE) as stored:
        event_keys = {name: stored[name] for name in stored.files}
    with np.load(prepared_dir / LOOKUP_FILE) as stored:
        lookup = (stored["sorted_trace_keys"], stored["key_order"])
    timeline = machines.MachineTimeline.load(prepared_dir / TIMELINE_FILE)
    with _AtomicFolder(spill_dir) as staging:
        spill = ShardSpill(staging / "shards")
        machine_usage = machines.MachineUsageAccumulator()
        _spill_usage_windows(
            usage_parts, tasks, event_keys, spill, report, lookup, timeline, machine_usage
        )
        spill.close()
        machine_usage.save(staging)
        report.phase("task_usage")
        _write_report(staging / REPORT_FILE, report)
    return report.as_dict()


def _spill_usage_windows(
    usage_parts: list[Path],
    tasks: pd.DataFrame,
    event_keys: dict[str, np.ndarray],
    spill: ShardSpill,
    report: ConversionReport,
    lookup: tuple[np.ndarray, np.ndarray],
    timeline: machines.MachineTimeline,
    machine_usage: machines.MachineUsageAccumulator | None = None,
) -> None:
    """`lookup`: (sorted trace keys, their task_keys), made by `prepare_google`; `timeline`
    gives each window its machine's state at the window's end. Every row (any job, kept or
    not) goes into `machine_usage`; each kept window carries its machine's code
    (`MACHINE_CODE_COLUMN`, -1 if unknown) for the gather, which adds the machine usage."""
    job_ids = np.sort(tasks["job_id"].unique())
    # (job, task index) -> task_key through one sorted int64 key (job ids < 2**40, indices < 2**23)
    sorted_trace_keys, key_order = lookup
    first_schedule = tasks["first_schedule"].to_numpy()
    finish = tasks["finish"].to_numpy()
    task_shard = tasks["shard"].to_numpy()
    n_keys = max(len(sorted_trace_keys), 1)
    if len(sorted_trace_keys) == 0:
        sorted_trace_keys = np.array([-2], dtype=np.int64)  # matches nothing (keys are >= -1)
        key_order = np.zeros(1, dtype=np.int64)

    def spill_chunk(table: pa.Table) -> None:
        # a function, so that the chunk's arrays are freed before the next chunk is read
        chunk = _Columns(table)
        report.count("usage_rows_read", len(table))
        # every row's window and machine code, once: the machine usage takes all rows,
        # the spilled windows the kept ones
        start_f, end_f = chunk["start_time"], chunk["end_time"]
        has_time = ~(np.isnan(start_f) | np.isnan(end_f))
        start_all = np.where(has_time, start_f, 0).astype(np.int64)
        end_all = np.where(has_time, end_f, 0).astype(np.int64)
        machine_all = chunk["machine_id"]
        code_all, known_machine_all = timeline.codes(machine_all)
        if machine_usage is not None:
            _add_machine_usage(
                chunk,
                start_all,
                end_all,
                has_time,
                code_all,
                known_machine_all,
                machine_usage,
                report,
            )
        job, task_index = chunk["job_id"], chunk["task_index"]
        wanted = _trace_key(job, task_index)
        position = np.minimum(np.searchsorted(sorted_trace_keys, wanted), n_keys - 1)
        known = sorted_trace_keys[position] == wanted
        report.count(
            "usage_rows_of_dropped_tasks", int((~known & _isin_sorted(job, job_ids)).sum())
        )
        task_key = key_order[position]  # meaningful where known
        timed = known & has_time
        report.count("usage_windows_missing_time", int((known & ~timed).sum()))
        start, end = start_all, end_all
        empty = timed & (end <= start)
        outside = timed & ~empty & ((start < first_schedule[task_key]) | (end > finish[task_key]))
        report.count("usage_windows_zero_length", int(empty.sum()))
        report.count("usage_windows_outside_task_life", int(outside.sum()))
        rows = np.flatnonzero(timed & ~empty & ~outside)
        if len(rows) == 0:
            return
        # one gather per column, grouped by shard, straight into Arrow (no DataFrame copies)
        rows = rows[np.argsort(task_shard[task_key[rows]], kind="stable")]
        task_key, start, end = task_key[rows], start[rows], end[rows]
        state = timeline.state(machine_all[rows], end)
        report.count("usage_windows_machine_unknown", int(np.isnan(state[:, 0]).sum()))
        columns = {
            "task_key": task_key,
            "window_start": start / US,
            "window_end": end / US,
            "available_from": end / US,
            **{f: chunk[f][rows] for f in USAGE_FEATURES},
            "evictions_so_far": counts_before(event_keys["evictions"], task_key, end).astype(float),
            "failures_so_far": counts_before(event_keys["failures"], task_key, end).astype(float),
            **dict(zip(machines.MACHINE_STATE_COLUMNS, state.T)),
            MACHINE_CODE_COLUMN: np.where(known_machine_all[rows], code_all[rows], -1),
        }
        table = pa.table(columns)
        shard_of_row = task_shard[task_key]
        bounds = np.flatnonzero(np.r_[True, shard_of_row[1:] != shard_of_row[:-1], True])
        for first, stop in zip(bounds[:-1], bounds[1:]):
            spill.write(int(shard_of_row[first]), table.slice(first, stop - first))

    for part in usage_parts:
        report.files_read.append(str(part))
        for chunk in iter_csv_chunks(
            part,
            schema.GOOGLE_TASK_USAGE,
            USAGE_TYPES,
            usecols=[
                "start_time",
                "end_time",
                "job_id",
                "task_index",
                "machine_id",
                *USAGE_FEATURES,
            ],
            skipped=report.skipped_rows,
            arrow=True,
        ):
            spill_chunk(chunk)
            del chunk  # only the reader's next chunk in memory while it is read


class _Columns:
    """A chunk's columns as float64 numpy arrays (missing = NaN), converted from its Arrow
    table one at a time when asked for, not all at once into a DataFrame."""

    def __init__(self, table: pa.Table):
        self.table = table

    def __getitem__(self, name: str) -> np.ndarray:
        return self.table.column(name).to_numpy().astype(np.float64, copy=False)


def _add_machine_usage(
    chunk: _Columns,
    start: np.ndarray,
    end: np.ndarray,
    timed: np.ndarray,
    code: np.ndarray,
    known: np.ndarray,
    machine_usage: machines.MachineUsageAccumulator,
    report: ConversionReport,
) -> None:
    """A chunk's rows (every job and priority: a machine's load is everything on it; their
    windows in µs, `timed` where both ends exist, machine codes and whether known) into the
    per-(machine, period) sums; rows without a usable window or machine are counted."""
    usable = timed & (end > start) & known
    report.count("machine_usage_rows_skipped", int((~usable).sum()))
    machine_usage.cover(start[timed], end[timed])
    if usable.any():
        values = np.column_stack([chunk[s][usable] for s in machines.MACHINE_USAGE_SOURCES])
        machine_usage.add(code[usable], start[usable], end[usable], values)


def read_spilled_shard(spill_dirs: list[Path | str], shard: int) -> pa.Table | None:
    """A shard's window rows from every spill folder, in the folders' order (= part order),
    so a job whose rows straddle parts is stitched back together; None if there are none."""
    tables = [
        table
        for folder in spill_dirs
        for table in [ShardSpill.read(Path(folder) / "shards", shard)]
        if table is not None
    ]
    if not tables:
        return None
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def add_machine_usage(
    windows: pa.Table | None,
    tasks: pd.DataFrame,
    spill_dirs: list[Path | str],
    report: ConversionReport,
) -> tuple[pa.Table | None, pd.DataFrame]:
    """Every window's machine usage over the last period complete at its end, and every
    task's over the last period complete before it started (`machines.MachineUsageLookup`,
    from every group's spilled (machine, period) sums)."""
    lookup = machines.MachineUsageLookup(spill_dirs)
    code = tasks[LAUNCH_MACHINE_CODE].to_numpy(np.int64)
    launch = lookup.state(code, code >= 0, tasks["first_schedule"].to_numpy(np.int64) - 1)
    tasks = tasks.assign(
        **dict(zip(machines.launch_columns(machines.MACHINE_USAGE_COLUMNS), launch.T))
    )
    if windows is None:
        return None, tasks
    code = windows.column(MACHINE_CODE_COLUMN).to_numpy()
    end_us = np.rint(windows.column("window_end").to_numpy() * US).astype(np.int64)
    usage = lookup.state(code, code >= 0, end_us)
    report.count("usage_windows_machine_usage_unknown", int(np.isnan(usage[:, 0]).sum()))
    windows = windows.drop_columns([MACHINE_CODE_COLUMN])
    for name, values in zip(machines.MACHINE_USAGE_COLUMNS, usage.T):
        windows = windows.append_column(name, pa.array(values))
    return windows, tasks


def check_latency_definition(latency_definition: str) -> None:
    if latency_definition not in LATENCY_DEFINITIONS:
        raise ValueError(
            f"latency_definition must be one of {LATENCY_DEFINITIONS}, got {latency_definition!r}"
        )


def google_task_table(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per-task facts of the kept Google tasks in the converted format (seconds)."""
    table = pd.DataFrame(
        {
            "task_key": tasks["task_key"],
            "job_id": tasks["job_id"].astype(str),
            "task_id": tasks["task_index"].astype(str),
            "task_start": tasks["first_schedule"] / US,
            "task_end": tasks["finish"] / US,
            "machine_id": machine_names(tasks["machine_id"].to_numpy()),
            "evictions": tasks["evictions"].astype(np.int32),
            "failures": tasks["failures"].astype(np.int32),
            "shard": tasks["shard"],
        }
    )
    table["latency"] = table["task_end"] - table["task_start"]
    for column in GOOGLE_LAUNCH_COLUMNS:
        if column in tasks:
            table[column] = tasks[column].to_numpy(np.float64)
    if "user" in tasks:
        table["workload_user"] = tasks["user"].astype(str).to_numpy()
        # an int class as text ("" if missing): the workload is a label, not a number
        classes = tasks["scheduling_class"].to_numpy(float)
        table["workload_scheduling_class"] = np.where(
            np.isnan(classes), "", np.nan_to_num(classes).astype(np.int64).astype(str)
        )
    return table


# ---------------------------------------------------------------------------------------------
# Google, task_events only (dataset kind google-2011-events)
# ---------------------------------------------------------------------------------------------
EVENTS_TYPES = TASK_EVENT_TYPES | {
    "user": "str",
    "scheduling_class": "int",
    "cpu_request": "float",
    "memory_request": "float",
    "disk_space_request": "float",
}


def read_all_events(parts: list[Path], report: ConversionReport) -> pd.DataFrame:
    """Every task event (all priorities: machine load counts every task on a machine)."""
    events = read_task_events(parts, report, EVENTS_TYPES)
    return events.sort_values(["job_id", "task_index", "timestamp"], kind="stable").reset_index(
        drop=True
    )
