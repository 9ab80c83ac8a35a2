"""Raw trace parts -> one Parquet file per job plus a manifest (format: `stragglers.jobdata`).

Google clusterdata-2011-2 (rules, also in the README):
- a task belongs to a *production* job when its task_events rows carry priority 9..11
  (the trace's production band; any scheduling class). Rows of other priorities are ignored;
- a task's outcome is its last event: FINISH -> finished; KILL or LOST -> dropped (counted);
  anything else (still pending/running when the converted parts end) -> unresolved, and a job
  with an unresolved task is dropped ("incomplete in the selected parts"): its latencies are
  not known, and dropping only its long tasks would remove exactly the stragglers;
- latency = FINISH time - first SCHEDULE time: every attempt counts, since a job waits for
  evicted and failed attempts too; evictions and failures are counted up to the FINISH;
- a job is kept with >= `min_tasks` finished tasks that have usage windows;
- usage windows: rows of task_usage inside [first SCHEDULE, FINISH] (others are counted and
  skipped), zero- or negative-length windows skipped and counted; a window's values become
  available at its end. EV/FL features are the evictions/failures up to the window's end.
Alibaba 2018 batch_instance: instances with status Terminated and end > start; an Alibaba
task (job_name, task_name) is a job here, kept with >= `min_tasks` instances; each instance is
one window [start, end] with its lifetime cpu/mem summaries (see README, deviations).

Conversion runs in stages (prepare, spill per group of parts, gather per shard, manifest) that
Snakemake runs as separate jobs, or `convert_*` runs in one process (see "Conversion runs as
stages" below). Every stage writes under `<out>.tmp` and renames it to `<out>` when complete,
so a failed or interrupted conversion never leaves output that looks complete.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc  # noqa: F401  (pa.ipc)
import pyarrow.parquet as pq

from stragglers import machines, schema
from stragglers.datasets import GOOGLE_FEATURES
from stragglers.jobdata import MANIFEST_WORKLOAD_COLUMNS, TASK_COLUMNS, manifest_columns
from stragglers.rawcsv import RawTraceError, SkippedRows, iter_csv_chunks

log = logging.getLogger(__name__)

PRODUCTION_PRIORITIES = (9, 10, 11)
US = 1_000_000.0
WRITER_THREADS = min(4, os.cpu_count() or 1)


@dataclass
class ConversionReport:
    dataset: str
    files_read: list[str] = field(default_factory=list)
    skipped_rows: SkippedRows = field(default_factory=SkippedRows)
    counts: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    _clock: float = field(default_factory=time.perf_counter)

    def phase(self, name: str) -> None:
        """Record the time since the previous phase ended under `name`."""
        now = time.perf_counter()
        self.seconds[name] = round(now - self._clock, 3)
        self._clock = now

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + int(n)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "files_read": self.files_read,
            "skipped_rows": self.skipped_rows.as_dict(),
            "counts": dict(sorted(self.counts.items())),
            "seconds": self.seconds,
        }


class ShardSpill:
    """Intermediate rows grouped by shard: one Arrow IPC file per shard, appended chunk by
    chunk, read back once per shard (so memory is bounded by a shard, not the trace).
    IPC with LZ4 rather than Parquet: written ~10x faster (no dictionary or statistics pass)
    and read back memory-mapped, and these files live only until their shard is gathered."""

    SUFFIX = ".arrow"

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir()
        self.writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
        self.sinks: dict[int, Any] = {}

    def path(self, shard: int) -> Path:
        return self.folder / f"shard-{shard}{self.SUFFIX}"

    def write(self, shard: int, table: pa.Table) -> None:
        if shard not in self.writers:
            self.sinks[shard] = pa.OSFile(str(self.path(shard)), "wb")
            self.writers[shard] = pa.ipc.new_file(
                self.sinks[shard], table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")
            )
        self.writers[shard].write_table(table)

    def close(self) -> None:
        for shard, writer in self.writers.items():
            writer.close()
            self.sinks[shard].close()
        self.writers, self.sinks = {}, {}

    @classmethod
    def read(cls, folder: Path, shard: int) -> pa.Table | None:
        path = folder / f"shard-{shard}{cls.SUFFIX}"
        if not path.exists():
            return None
        with pa.memory_map(str(path)) as source:
            return pa.ipc.open_file(source).read_all()


def list_parts(raw_dir: Path, table: str) -> list[Path]:
    parts = optional_parts(raw_dir, table)
    if not parts:
        raise RawTraceError(f"no {table} parts (part-NNNNN-of-MMMMM.csv[.gz]) in {Path(raw_dir) / table}")
    return parts


def optional_parts(raw_dir: Path, table: str) -> list[Path]:
    """Parts of a table the conversion can do without (machine_events): [] if none."""
    folder = Path(raw_dir) / table
    return sorted(folder.glob("part-*-of-*.csv.gz")) + sorted(folder.glob("part-*-of-*.csv"))


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
                part, None, "empty timestamp/job/task/event", "missing required field", n=int(missing.sum())
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
    other_jobs = np.setdiff1d(events.loc[~production, "job_id"].unique(), selected["job_id"].unique())
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


def select_google_tasks(tasks: pd.DataFrame, min_tasks: int, report: ConversionReport) -> pd.DataFrame:
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
        for name, code in (("evictions", schema.EventType.EVICT), ("failures", schema.EventType.FAIL))
        for rows in [events[events["event_type"] == code]]
    }


def counts_before(
    event_keys: np.ndarray, task_key: np.ndarray, time_us: np.ndarray
) -> np.ndarray:
    """Number of events of each task with timestamp <= time (event_keys sorted composites)."""
    upper = np.searchsorted(event_keys, _composite(task_key, time_us), side="right")
    lower = np.searchsorted(event_keys, _composite(task_key, np.zeros_like(time_us)), side="left")
    return upper - lower


# ---------------------------------------------------------------------------------------------
# Google: usage windows -> per-job files
# ---------------------------------------------------------------------------------------------
# Conversion runs as stages so that Snakemake can scatter it (see `stragglers.scatter`):
#   prepare   (Google, task_usage datasets): every task_events part -> the kept tasks, their
#             shard and their eviction/failure times (folder `prepared`);
#   spill     one job per group of raw parts -> one Arrow IPC file of window rows per shard;
#   gather    one job per shard -> that shard's per-job files (jobs/shard-<k>/), a manifest
#             piece and a report piece (jobs straddling parts are stitched here);
#   manifest  the pieces -> manifest.parquet and report.json (counts and skipped rows summed).
# `convert_google` & co. run the same stages in one process, so the single-job and the
# scattered conversion share every line that decides a row.
def _cleaning_up_on_failure(convert):
    """Remove `<out>.tmp` when a conversion raises, so no partial output is left behind."""

    def wrapper(raw_dir, out_dir, **kwargs):
        try:
            return convert(raw_dir, out_dir, **kwargs)
        except BaseException:
            staging = Path(out_dir).with_name(Path(out_dir).name + ".tmp")
            shutil.rmtree(staging, ignore_errors=True)
            raise

    wrapper.__doc__ = convert.__doc__
    wrapper.__name__ = convert.__name__
    return wrapper


class _AtomicFolder:
    """A folder written under `<folder>.tmp` and renamed into place only on success."""

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        self.staging = self.folder.with_name(self.folder.name + ".tmp")

    def __enter__(self) -> Path:
        if self.staging.exists():
            shutil.rmtree(self.staging)
        self.staging.mkdir(parents=True)
        return self.staging

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            return
        if self.folder.exists():
            shutil.rmtree(self.folder)
        self.staging.rename(self.folder)


TASKS_FILE = "tasks.parquet"
EVENT_KEYS_FILE = "event_keys.npz"
LOOKUP_FILE = "trace_key_lookup.npz"
REPORT_FILE = "report.json"
# timeline code of a task's first machine (-1: unknown), for the launch-time machine usage
LAUNCH_MACHINE_CODE = "launch_machine_code"
# the per-task facts a gather needs (a row's position is its task_key)
TASK_FILE_COLUMNS = [
    "job_id", "task_index", "first_schedule", "finish", "machine_id", "evictions", "failures",
    "task_key", "shard", *machines.launch_columns(), "user", "scheduling_class", LAUNCH_MACHINE_CODE,
]
TIMELINE_FILE = "machine_timeline.npz"
# every per-task launch column of the Google kinds: the timeline's and the task_usage one's
GOOGLE_LAUNCH_COLUMNS = machines.launch_columns(machines.MACHINE_STATE_COLUMNS + machines.MACHINE_USAGE_COLUMNS)
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
    joined = tasks.drop(columns=["user", "scheduling_class"], errors="ignore").join(firsts, on=["job_id", "task_index"])
    joined["user"] = joined["user"].fillna("").astype(str)
    joined["scheduling_class"] = joined["scheduling_class"].astype(float)
    return joined


def add_launch_state(
    tasks: pd.DataFrame, events: pd.DataFrame, timeline: machines.MachineTimeline,
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
    return tasks.assign(**dict(zip(machines.launch_columns(), state.T)), **{LAUNCH_MACHINE_CODE: np.where(known, code, -1)})


def _assign_shards(tasks: pd.DataFrame, n_shards: int) -> pd.DataFrame:
    """task_key = row position; jobs dealt round-robin to shards in job id order."""
    tasks["task_key"] = np.arange(len(tasks), dtype=np.int64)
    job_ids = np.sort(tasks["job_id"].unique())
    shard_of_job = pd.Series(np.arange(len(job_ids)) % n_shards, index=job_ids)
    tasks["shard"] = shard_of_job.reindex(tasks["job_id"]).to_numpy()
    return tasks


def prepare_google(
    event_parts: list[Path],
    prepared_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = 100,
    priorities=PRODUCTION_PRIORITIES,
    machine_event_parts: list[Path] = (),
) -> dict[str, Any]:
    """Stage 1 (kind google-2011): the task events of every part (a job may span parts) ->
    `tasks.parquet` (kept tasks, their shard and their machine's state at launch),
    `event_keys.npz` (their evictions and failures up to FINISH), `trace_key_lookup.npz`
    ((job, task index) -> task_key, sorted), `machine_timeline.npz` (every job's attempts and
    the machine_events: `stragglers.machines`) and `report.json`, written atomically."""
    report = ConversionReport(dataset)
    # every priority: a machine's load counts every task on it
    all_events = read_all_events(list(event_parts), report)
    timeline = machine_timeline(all_events, list(machine_event_parts), report)
    events = production_events(all_events, report, priorities)
    tasks = _assign_shards(select_google_tasks(task_outcomes(events), min_tasks, report), n_shards)
    tasks = add_launch_state(tasks, events, timeline, report)
    tasks = add_workload(tasks, events)
    del all_events
    ev = events.merge(tasks[["job_id", "task_index", "task_key", "finish"]], on=["job_id", "task_index"])
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
        np.savez(staging / LOOKUP_FILE, sorted_trace_keys=trace_keys[key_order], key_order=key_order)
        timeline.save(staging / TIMELINE_FILE)
        _write_report(staging / REPORT_FILE, report)
    return report.as_dict()


def _write_report(path: Path, report: "ConversionReport | dict") -> None:
    summary = report.as_dict() if isinstance(report, ConversionReport) else report
    path.write_text(json.dumps(summary, indent=2) + "\n")


def read_report(path: Path | str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def spill_google_usage(
    usage_parts: list[Path], prepared_dir: Path | str, spill_dir: Path | str, *, dataset: str
) -> dict[str, Any]:
    """Stage 2 (kind google-2011): usage windows of the kept tasks in `usage_parts` -> one
    Arrow IPC file of window rows per shard in `spill_dir` (plus `report.json`)."""
    prepared_dir = Path(prepared_dir)
    report = ConversionReport(dataset)
    tasks = pd.read_parquet(
        prepared_dir / TASKS_FILE, columns=["job_id", "task_index", "first_schedule", "finish", "shard"]
    )
    with np.load(prepared_dir / EVENT_KEYS_FILE) as stored:
        event_keys = {name: stored[name] for name in stored.files}
    with np.load(prepared_dir / LOOKUP_FILE) as stored:
        lookup = (stored["sorted_trace_keys"], stored["key_order"])
    timeline = machines.MachineTimeline.load(prepared_dir / TIMELINE_FILE)
    with _AtomicFolder(spill_dir) as staging:
        spill = ShardSpill(staging / "shards")
        machine_usage = machines.MachineUsageAccumulator()
        _spill_usage_windows(usage_parts, tasks, event_keys, spill, report, lookup, timeline, machine_usage)
        spill.close()
        machine_usage.save(staging)
        report.phase("task_usage")
        _write_report(staging / REPORT_FILE, report)
    return report.as_dict()


def _spill_usage_windows(
    usage_parts: list[Path],
    tasks: pd.DataFrame,
    event_keys: dict[str, np.ndarray],
    spill: "ShardSpill",
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
    for part in usage_parts:
        report.files_read.append(str(part))
        for chunk in iter_csv_chunks(
            part,
            schema.GOOGLE_TASK_USAGE,
            USAGE_TYPES,
            usecols=["start_time", "end_time", "job_id", "task_index", "machine_id", *USAGE_FEATURES],
            skipped=report.skipped_rows,
        ):
            report.count("usage_rows_read", len(chunk))
            # every row's window and machine code, once: the machine usage takes all rows,
            # the spilled windows the kept ones
            start_f, end_f = chunk["start_time"].to_numpy(), chunk["end_time"].to_numpy()
            has_time = ~(np.isnan(start_f) | np.isnan(end_f))
            start_all = np.where(has_time, start_f, 0).astype(np.int64)
            end_all = np.where(has_time, end_f, 0).astype(np.int64)
            code_all, known_machine_all = timeline.codes(chunk["machine_id"].to_numpy(np.float64))
            if machine_usage is not None:
                _add_machine_usage(chunk, start_all, end_all, has_time, code_all, known_machine_all,
                                   machine_usage, report)
            job, task_index = chunk["job_id"].to_numpy(), chunk["task_index"].to_numpy()
            wanted = _trace_key(job, task_index)
            position = np.minimum(np.searchsorted(sorted_trace_keys, wanted), n_keys - 1)
            known = sorted_trace_keys[position] == wanted
            report.count("usage_rows_of_dropped_tasks", int((~known & _isin_sorted(job, job_ids)).sum()))
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
                continue
            # one gather per column, grouped by shard, straight into Arrow (no DataFrame copies)
            rows = rows[np.argsort(task_shard[task_key[rows]], kind="stable")]
            task_key, start, end = task_key[rows], start[rows], end[rows]
            state = timeline.state(chunk["machine_id"].to_numpy(np.float64)[rows], end)
            report.count("usage_windows_machine_unknown", int(np.isnan(state[:, 0]).sum()))
            columns = {
                "task_key": task_key,
                "window_start": start / US,
                "window_end": end / US,
                "available_from": end / US,
                **{f: chunk[f].to_numpy(np.float64)[rows] for f in USAGE_FEATURES},
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


def _add_machine_usage(
    chunk: pd.DataFrame, start: np.ndarray, end: np.ndarray, timed: np.ndarray, code: np.ndarray,
    known: np.ndarray, machine_usage: machines.MachineUsageAccumulator, report: ConversionReport,
) -> None:
    """A chunk's rows (every job and priority: a machine's load is everything on it; their
    windows in µs, `timed` where both ends exist, machine codes and whether known) into the
    per-(machine, period) sums; rows without a usable window or machine are counted."""
    usable = timed & (end > start) & known
    report.count("machine_usage_rows_skipped", int((~usable).sum()))
    machine_usage.cover(start[timed], end[timed])
    if usable.any():
        values = chunk[list(machines.MACHINE_USAGE_SOURCES)].to_numpy(np.float64)[usable]
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


def gather_shard(
    spill_dirs: list[Path | str],
    shard: int,
    jobs_dir: Path | str,
    *,
    kind: str,
    dataset: str,
    min_tasks: int = 100,
    tasks_path: Path | str | None = None,
    latency_definition: str = "schedule_to_finish",
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Stage 3: one shard's spilled rows -> one Parquet file per job in `jobs_dir` (written
    atomically); returns that shard's manifest rows and report. `tasks_path`: the task table
    of the Google kinds (`prepared/tasks.parquet`, or the events kind's spill folder)."""
    report = ConversionReport(dataset)
    windows = read_spilled_shard(spill_dirs, shard)
    relative = f"jobs/shard-{shard}"
    with _AtomicFolder(jobs_dir) as staging:
        if kind in ALIBABA_LAYOUTS:
            state_path = Path(spill_dirs[0]) / MACHINE_STATE_FILE
            state = machines.BinnedMachineState.load(state_path) if state_path.exists() else None
            rows = _write_alibaba_shard(windows, shard, staging, relative, min_tasks, dataset, report, state)
        else:
            tasks = pd.read_parquet(tasks_path)
            # only this shard's tasks: the per-task text columns cost time per task
            tasks = tasks[tasks["shard"].to_numpy() == shard]
            if kind == "google-2011":
                windows, tasks = add_machine_usage(windows, tasks, spill_dirs, report)
            task_table = google_task_table(tasks)
            rows = _write_shard_jobs(
                windows, shard, staging, relative, task_table, min_tasks, dataset, report,
                latency_definition,
            )
    report.phase("write_jobs")
    return pd.DataFrame(rows, columns=manifest_columns(kind)), report.as_dict()


def add_machine_usage(
    windows: pa.Table | None, tasks: pd.DataFrame, spill_dirs: list[Path | str], report: ConversionReport
) -> tuple[pa.Table | None, pd.DataFrame]:
    """Every window's machine usage over the last period complete at its end, and every
    task's over the last period complete before it started (`machines.MachineUsageLookup`,
    from every group's spilled (machine, period) sums)."""
    lookup = machines.MachineUsageLookup(spill_dirs)
    code = tasks[LAUNCH_MACHINE_CODE].to_numpy(np.int64)
    launch = lookup.state(code, code >= 0, tasks["first_schedule"].to_numpy(np.int64) - 1)
    tasks = tasks.assign(**dict(zip(machines.launch_columns(machines.MACHINE_USAGE_COLUMNS), launch.T)))
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


def merge_reports(dataset: str, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Stage reports -> one: files in order, counts, skipped rows and seconds summed."""
    merged = ConversionReport(dataset)
    seconds: dict[str, float] = {}
    for piece in reports:
        merged.files_read.extend(piece["files_read"])
        for key, n in piece["counts"].items():
            merged.count(key, n)
        skipped = piece["skipped_rows"]
        merged.skipped_rows.count += skipped["count"]
        for reason, n in skipped["by_reason"].items():
            merged.skipped_rows.by_reason[reason] = merged.skipped_rows.by_reason.get(reason, 0) + n
        room = merged.skipped_rows.keep - len(merged.skipped_rows.examples)
        merged.skipped_rows.examples.extend(skipped["examples"][: max(room, 0)])
        for name, value in piece["seconds"].items():
            seconds[name] = round(seconds.get(name, 0.0) + value, 3)
    summary = merged.as_dict()
    summary["seconds"] = seconds
    return summary


def write_manifest(
    out_dir: Path | str,
    manifests: list[pd.DataFrame],
    reports: list[dict[str, Any]],
    *,
    kind: str,
    dataset: str,
) -> dict[str, Any]:
    """Stage 4: the shards' manifest rows (in shard order) and every stage's report ->
    `manifest.parquet` and `report.json` in `out_dir` (each written atomically)."""
    out_dir = Path(out_dir)
    rows = [row for frame in manifests for row in frame.to_dict("records")]
    manifest = pd.DataFrame(rows, columns=manifest_columns(kind))
    if kind in ALIBABA_LAYOUTS:
        manifest = manifest.sort_values("job_id", ignore_index=True)
    summary = merge_reports(dataset, reports)
    kept = {"jobs_kept": len(manifest), "tasks_kept": int(manifest["n_tasks"].sum()) if len(manifest) else 0}
    if kind not in ALIBABA_LAYOUTS:
        kept["windows_kept"] = int(manifest["n_windows"].sum()) if len(manifest) else 0
    summary["counts"] = dict(sorted({**summary["counts"], **kept}.items()))
    out_dir.mkdir(parents=True, exist_ok=True)
    _atomic_write(out_dir / "manifest.parquet", lambda path: manifest.to_parquet(path, index=False))
    _atomic_write(out_dir / REPORT_FILE, lambda path: _write_report(path, summary))
    log.info("converted %s: %s", dataset, summary["counts"])
    return summary


def _atomic_write(path: Path, write) -> None:
    staging = path.with_name(path.name + ".tmp")
    write(staging)
    os.replace(staging, path)


def _convert_in_one_process(
    out_dir: Path, kind: str, dataset: str, n_shards: int, min_tasks: int, spill, tasks_path=None,
    latency_definition: str = "schedule_to_finish", prepared_report=None,
) -> dict[str, Any]:
    """The single-job conversion: `spill(spill_dir)` writes one spill folder, then every
    shard is gathered and the manifest written, all under `<out>.tmp`, renamed at the end."""
    staging = _fresh_staging(out_dir)
    reports = [prepared_report] if prepared_report else []
    reports.append(spill(staging / "_spill"))
    if tasks_path is None and kind == "google-2011-events":
        tasks_path = staging / "_spill" / TASKS_FILE
    manifests = []
    for shard in range(n_shards):
        manifest, report = gather_shard(
            [staging / "_spill"], shard, staging / "jobs" / f"shard-{shard}", kind=kind,
            dataset=dataset, min_tasks=min_tasks, tasks_path=tasks_path,
            latency_definition=latency_definition,
        )
        manifests.append(manifest)
        reports.append(report)
    shutil.rmtree(staging / "_spill")
    summary = write_manifest(staging, manifests, reports, kind=kind, dataset=dataset)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    staging.rename(out_dir)
    return summary


@_cleaning_up_on_failure
def convert_google(
    raw_dir: Path | str,
    out_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = 100,
    priorities=PRODUCTION_PRIORITIES,
    latency_definition: str = "schedule_to_finish",
) -> dict[str, Any]:
    """`latency_definition`: "schedule_to_finish" (default: FINISH - first SCHEDULE) or
    "usage_windows" (the reference code's: the sum of the task's usage-window durations; the
    timeline, i.e. when the task finishes, stays the trace's)."""
    check_latency_definition(latency_definition)
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    prepared = out_dir.with_name(out_dir.name + ".prepared")
    try:
        prepared_report = prepare_google(
            list_parts(raw_dir, "task_events"), prepared, dataset=dataset, n_shards=n_shards,
            min_tasks=min_tasks, priorities=priorities,
            machine_event_parts=optional_parts(raw_dir, "machine_events"),
        )
        return _convert_in_one_process(
            out_dir, "google-2011", dataset, n_shards, min_tasks,
            spill=lambda folder: spill_google_usage(
                list_parts(raw_dir, "task_usage"), prepared, folder, dataset=dataset
            ),
            tasks_path=prepared / TASKS_FILE, latency_definition=latency_definition,
            prepared_report=prepared_report,
        )
    finally:
        shutil.rmtree(prepared, ignore_errors=True)


LATENCY_DEFINITIONS = ("schedule_to_finish", "usage_windows")


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


def _write_shard_jobs(
    windows: pa.Table | None,
    shard: int,
    jobs_dir: Path,
    relative: str,
    task_table: pd.DataFrame,
    min_tasks: int,
    dataset: str,
    report: ConversionReport,
    latency_definition: str = "schedule_to_finish",
) -> list[dict[str, Any]]:
    """One shard: attach task facts to windows, sort once by (job, task start, task, window),
    number tasks densely per job, and write one Parquet file per job from slices of one Arrow
    table. `task_table` holds (at least) the shard's tasks, sorted by task_key."""
    if windows is None:
        return []
    task_table = task_table.reset_index(drop=True)
    job_rank = pd.factorize(task_table["job_id"], sort=True)[0]
    job_names = np.sort(task_table["job_id"].unique())
    facts = {c: task_table[c].to_numpy() for c in TASK_COLUMNS if c != "latency"}
    facts["latency"] = task_table["latency"].to_numpy()
    facts.update({c: task_table[c].to_numpy() for c in GOOGLE_LAUNCH_COLUMNS if c in task_table})
    workload = {c: task_table[c].to_numpy() for c in MANIFEST_WORKLOAD_COLUMNS["google-2011"] if c in task_table}
    rows = []
    # task_key -> row of task_table
    sorted_keys = task_table["task_key"].to_numpy()
    spilled_keys = windows.column("task_key").to_numpy()
    key = np.minimum(np.searchsorted(sorted_keys, spilled_keys), max(len(sorted_keys) - 1, 0))
    if len(key) and (len(sorted_keys) == 0 or np.any(sorted_keys[key] != spilled_keys)):
        raise ValueError(f"shard {shard}: spilled windows of tasks missing from the task table")
    start = windows.column("window_start").to_numpy()
    order = np.lexsort((start, key, facts["task_start"][key], job_rank[key]))
    key = key[order]
    shard_tasks = np.flatnonzero(task_table["shard"].to_numpy() == shard)
    report.count("tasks_dropped_no_usage_windows", int(len(shard_tasks) - len(np.unique(key))))
    job_of_row = job_rank[key]
    job_starts = np.flatnonzero(np.r_[True, job_of_row[1:] != job_of_row[:-1]])
    job_ends = np.r_[job_starts[1:], len(key)]
    new_task = np.r_[True, key[1:] != key[:-1]]
    task_counter = np.cumsum(new_task) - 1
    task_position = task_counter - task_counter[job_starts].repeat(job_ends - job_starts)
    columns: dict[str, Any] = {"task": pa.array(task_position.astype(np.int32))}
    for name in windows.column_names:
        if name != "task_key":
            columns[name] = pa.array(windows.column(name).to_numpy()[order])
    for name, values in facts.items():
        columns[name] = pa.array(values[key])
    if latency_definition == "usage_windows":
        duration = columns["window_end"].to_numpy() - columns["window_start"].to_numpy()
        per_task = np.bincount(task_counter, weights=duration)
        columns["latency"] = pa.array(per_task[task_counter])
    table = pa.table(columns)
    pending = []
    for first, stop in zip(job_starts, job_ends):
        n_tasks = int(task_position[stop - 1]) + 1
        if n_tasks < min_tasks:
            report.count("jobs_dropped_below_min_tasks_with_windows")
            continue
        job_id = str(job_names[job_of_row[first]])
        name = f"{_safe_name(job_id)}.parquet"
        pending.append((table.slice(first, stop - first), jobs_dir / name))
        task_rows = key[first:stop][new_task[first:stop]]
        rows.append(
            {
                "dataset": dataset,
                "job_id": job_id,
                "n_tasks": n_tasks,
                "n_windows": int(stop - first),
                "shard": int(shard),
                "path": f"{relative}/{name}",
                "job_start": float(facts["task_start"][task_rows].min()),
                "job_end": float(facts["task_end"][task_rows].max()),
                **{column: str(values[task_rows[0]]) for column, values in workload.items()},
            }
        )
    # a Parquet file costs ~2-3 ms of fixed work; pyarrow releases the GIL, so write in
    # parallel (the files are independent: the output does not depend on the order)
    with ThreadPoolExecutor(max_workers=WRITER_THREADS) as pool:
        list(pool.map(lambda item: pq.write_table(*item, write_statistics=False), pending))
    return rows


def _safe_name(job_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(job_id))


def _fresh_staging(out_dir: Path) -> Path:
    staging = out_dir.with_name(out_dir.name + ".tmp")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    return staging


# ---------------------------------------------------------------------------------------------
# Alibaba batch_instance (2018 and 2017)
# ---------------------------------------------------------------------------------------------
ALIBABA_FEATURES = ["cpu_avg", "cpu_max", "mem_avg", "mem_max"]
ALIBABA_NUMERIC = ["start_time", "end_time", "seq_no", "total_seq_no", *ALIBABA_FEATURES]


@dataclass(frozen=True)
class AlibabaLayout:
    columns: list[str]
    job_columns: tuple[str, str]  # (job, task) of the trace: a "job" here is one trace task
    instance_column: str | None  # per-instance name (2017 has none)
    archive: str  # tarball holding the table, read as a stream
    member: str  # the table's name inside it (or on disk)
    numeric: tuple[str, ...] = tuple(ALIBABA_NUMERIC)


ALIBABA_LAYOUTS = {
    "alibaba-2018": AlibabaLayout(
        schema.ALIBABA_2018_BATCH_INSTANCE, ("job_name", "task_name"), "instance_name",
        "batch_instance.tar.gz", "batch_instance.csv",
    ),
    "alibaba-2017": AlibabaLayout(
        schema.ALIBABA_2017_BATCH_INSTANCE, ("job_id", "task_id"), None,
        "alibaba-trace-2017.tar.gz", "batch_instance.csv",
    ),
}


# the 2018 machine tables (optional: without them the machine's utilisation and size are NaN)
ALIBABA_MACHINE_LAYOUTS = {
    "machine_meta": AlibabaLayout(
        schema.ALIBABA_2018_MACHINE_META, ("", ""), None, "machine_meta.tar.gz", "machine_meta.csv",
        ("time_stamp", "cpu_num", "mem_size"),
    ),
    "machine_usage": AlibabaLayout(
        schema.ALIBABA_2018_MACHINE_USAGE, ("", ""), None, "machine_usage.tar.gz", "machine_usage.csv",
        ("time_stamp", *machines.ALIBABA_USAGE_COLUMNS),
    ),
}


def alibaba_table_present(raw_dir: Path, layout: AlibabaLayout) -> bool:
    return any((Path(raw_dir) / name).exists() for name in (layout.member + ".gz", layout.member, layout.archive))


def alibaba_chunks(raw_dir: Path, layout: AlibabaLayout, report: ConversionReport):
    """Chunks of an Alibaba table: a plain or gzip CSV if present, else the tarball read as
    a stream (never extracted to disk)."""
    for name in (layout.member + ".gz", layout.member):
        if (raw_dir / name).exists():
            report.files_read.append(str(raw_dir / name))
            yield from iter_csv_chunks(
                raw_dir / name, layout.columns, {c: "float" for c in layout.numeric},
                skipped=report.skipped_rows,
            )
            return
    archive = raw_dir / layout.archive
    if not archive.exists():
        raise RawTraceError(
            f"no {layout.member}[.gz] or {layout.archive} in {raw_dir}"
        )
    from stragglers.tarstream import iter_tar_csv

    report.files_read.append(f"{archive}:{layout.member}")
    for chunk in iter_tar_csv(archive, layout.member, layout.columns, dtype=str):
        for column in layout.numeric:
            text = chunk[column]
            values = pd.to_numeric(text.replace("", np.nan), errors="coerce")
            # an empty field is missing, not bad; read as text it may arrive as NaN or "nan"
            empty = text.isna() | text.astype(str).str.strip().str.lower().isin(["", "nan"])
            bad = values.isna() & ~empty
            report.skipped_rows.add(
                archive, None, f"{column}: not a number", "unparsable value", n=int(bad.sum())
            )
            # a new frame per column: assigning into a filtered slice would write to a copy
            chunk = chunk.assign(**{column: values})[~bad.to_numpy()]
        yield chunk


def stable_shard(keys: pd.Series, n_shards: int) -> np.ndarray:
    """Shard of each job id from a hash of its text: fixed before all jobs are seen."""
    hashed = pd.util.hash_pandas_object(keys.astype(str), index=False, hash_key="stragglers-shard")
    return (hashed.to_numpy() % np.uint64(n_shards)).astype(np.int64)


MACHINE_STATE_FILE = "machine_state.npz"


def _add_instances_to_machine_state(state: machines.BinnedMachineState, chunk: pd.DataFrame, report) -> None:
    """Every instance with a start (any status, any job) counts on its machine."""
    number = machines.alibaba_machine_number(chunk["machine_id"].to_numpy())
    started = chunk["start_time"].notna().to_numpy()
    placed = started & ~np.isnan(number)
    report.count("instances_started_without_machine", int((started & np.isnan(number)).sum()))
    if placed.any():
        state.add_instances(
            number[placed], chunk["start_time"].to_numpy(float)[placed],
            chunk["end_time"].to_numpy(float)[placed],
            (chunk["status"].astype(str) == "Failed").to_numpy()[placed],
        )


def _read_machine_tables(raw_dir: Path, state: machines.BinnedMachineState, report: ConversionReport) -> None:
    """machine_usage (streamed) and machine_meta into the machine state; a missing table is
    counted, its columns stay NaN."""
    for table, layout in ALIBABA_MACHINE_LAYOUTS.items():
        if not alibaba_table_present(raw_dir, layout):
            report.count(f"{table}_table_missing")
            continue
        meta = []
        for chunk in alibaba_chunks(raw_dir, layout, report):
            report.count(f"{table}_rows_read", len(chunk))
            number = machines.alibaba_machine_number(chunk["machine_id"].to_numpy())
            time_s = chunk["time_stamp"].to_numpy(float)
            good = ~np.isnan(number) & ~np.isnan(time_s)
            report.count(f"{table}_rows_without_machine_or_time", int((~good).sum()))
            if table == "machine_usage":
                values = chunk[list(machines.ALIBABA_USAGE_COLUMNS)].to_numpy(float)
                state.add_usage(number[good], time_s[good], values[good])
            else:
                meta.append((number[good], time_s[good], chunk[["cpu_num", "mem_size"]].to_numpy(float)[good]))
        if table == "machine_meta" and meta:
            state.set_meta(*(np.concatenate(parts) for parts in zip(*meta)))


def spill_alibaba(
    raw_dir: Path | str, spill_dir: Path | str, *, dataset: str, n_shards: int, kind: str = "alibaba-2018",
    bin_seconds: float = 60.0,
) -> dict[str, Any]:
    """Stage 2 (Alibaba): one streaming pass over the batch_instance table (one "part": the
    CSV or the tarball) keeping Terminated instances with end > start, spilled to one Parquet
    file per shard (a hash of the job id). Alibaba 2018: every instance also counts in its
    machine's state, with machine_usage and machine_meta (`machines.BinnedMachineState` on
    a grid of `bin_seconds`, saved to `machine_state.npz`)."""
    raw_dir = Path(raw_dir)
    layout = ALIBABA_LAYOUTS[kind]
    report = ConversionReport(dataset)
    job_column, task_column = layout.job_columns
    state = machines.BinnedMachineState(bin_seconds) if kind == "alibaba-2018" else None
    with _AtomicFolder(spill_dir) as staging:
        spill = ShardSpill(staging / "shards")
        for chunk in alibaba_chunks(raw_dir, layout, report):
            report.count("instance_rows_read", len(chunk))
            if state is not None:
                _add_instances_to_machine_state(state, chunk, report)
            terminated = chunk["status"].astype(str) == "Terminated"
            report.count("instances_not_terminated", int((~terminated).sum()))
            chunk = chunk[terminated]
            timed = chunk["start_time"].notna() & chunk["end_time"].notna()
            positive = timed & (chunk["end_time"] > chunk["start_time"])
            report.count("instances_zero_or_missing_duration", int((~positive).sum()))
            chunk = chunk[positive]
            if chunk.empty:
                continue
            job_id = chunk[job_column].astype(str) + "." + chunk[task_column].astype(str)
            instance = (
                chunk[layout.instance_column].astype(str) if layout.instance_column
                else pd.Series("instance", index=chunk.index)
            )
            seq = chunk["seq_no"].astype("Int64").astype(str)
            piece = pd.DataFrame(
                {
                    "job_id": job_id.to_numpy(),
                    "task_id": (instance + "#" + seq).to_numpy(),
                    "start": chunk["start_time"].to_numpy(float),
                    "end": chunk["end_time"].to_numpy(float),
                    "machine_id": chunk["machine_id"].astype(str).to_numpy(),
                    **{f: chunk[f].to_numpy(float) for f in ALIBABA_FEATURES},
                    # workload attributes (2018): the trace's task type and the task name
                    "task_type": (
                        chunk["task_type"].astype(str).to_numpy() if "task_type" in chunk
                        else np.full(len(chunk), "")
                    ),
                    "task_name": chunk[task_column].astype(str).to_numpy(),
                }
            )
            piece["shard"] = stable_shard(piece["job_id"], n_shards)
            for shard, rows in piece.groupby("shard"):
                spill.write(int(shard), pa.Table.from_pandas(rows.drop(columns="shard"), preserve_index=False))
        spill.close()
        report.phase("instances")
        if state is not None:
            _read_machine_tables(raw_dir, state, report)
            state.finish()
            state.save(staging / MACHINE_STATE_FILE)
            report.phase("machine_tables")
        _write_report(staging / REPORT_FILE, report)
    return report.as_dict()


def task_family(task_name: str) -> str:
    """The DAG role of an Alibaba 2018 task name: its leading letters (M1 -> "M", R2_1 ->
    "R", J3_2 -> "J"; an independent task_xxx -> "task")."""
    match = re.match(r"[A-Za-z]+", task_name)
    return match.group(0) if match else ""


def _write_alibaba_shard(
    table: pa.Table | None,
    shard: int,
    jobs_dir: Path,
    relative: str,
    min_tasks: int,
    dataset: str,
    report: ConversionReport,
    state: "machines.BinnedMachineState | None" = None,
) -> list[dict[str, Any]]:
    """One shard's instances -> one Parquet file per Alibaba task with >= `min_tasks` of them;
    with `state`, each instance's machine state at its start (window and launch columns)."""
    if table is None:
        return []
    rows = []
    instances = table.to_pandas()
    sizes = instances.groupby("job_id").size()
    report.count("alibaba_tasks_seen", len(sizes))
    report.count("jobs_dropped_below_min_tasks", int((sizes < min_tasks).sum()))
    instances = instances[instances["job_id"].isin(sizes[sizes >= min_tasks].index)]
    for job_id, inst in instances.groupby("job_id", sort=True):
        inst = inst.sort_values(["start", "task_id"], kind="stable")
        start, end = inst["start"].to_numpy(), inst["end"].to_numpy()
        frame = pd.DataFrame(
            {
                "task": np.arange(len(inst), dtype=np.int32),
                "window_start": start,
                "window_end": end,
                # lifetime summaries are all the trace has: visible from the start (a leak
                # the trace imposes, documented in the README)
                "available_from": start,
                **{f: inst[f].to_numpy(float) for f in ALIBABA_FEATURES},
                "task_id": inst["task_id"].to_numpy(),
                "task_start": start,
                "task_end": end,
                "latency": end - start,
                "machine_id": inst["machine_id"].to_numpy(),
                "evictions": np.zeros(len(inst), dtype=np.int32),
                "failures": np.zeros(len(inst), dtype=np.int32),
            }
        )
        if state is not None:
            # the one window is available from the start: its state and the launch state are
            # the machine's at the last grid boundary at or before the start
            values = state.state(machines.alibaba_machine_number(inst["machine_id"].to_numpy()), start)
            report.count("instances_machine_unknown", int(np.isnan(values[:, 0]).sum()))
            columns = machines.ALIBABA_MACHINE_STATE_COLUMNS
            for column, launch, value in zip(columns, machines.launch_columns(columns), values.T):
                frame[column] = value
                frame[launch] = value
        name = f"{_safe_name(job_id)}.parquet"
        frame.to_parquet(jobs_dir / name, index=False)
        rows.append(
            {
                "dataset": dataset, "job_id": str(job_id), "n_tasks": len(frame),
                "n_windows": len(frame), "shard": int(shard), "path": f"{relative}/{name}",
                "job_start": float(start.min()), "job_end": float(end.max()),
                "workload_task_type": str(inst["task_type"].iloc[0]),
                "workload_task_family": task_family(str(inst["task_name"].iloc[0])),
            }
        )
    return rows


@_cleaning_up_on_failure
def convert_alibaba(
    raw_dir: Path | str,
    out_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = 100,
    kind: str = "alibaba-2018",
    bin_seconds: float = 60.0,
) -> dict[str, Any]:
    """One streaming pass: keep Terminated instances with end > start, spill them to one
    Parquet file per shard (a hash of the job id), then write each shard's jobs."""
    return _convert_in_one_process(
        Path(out_dir), kind, dataset, n_shards, min_tasks,
        spill=lambda folder: spill_alibaba(
            raw_dir, folder, dataset=dataset, n_shards=n_shards, kind=kind, bin_seconds=bin_seconds
        ),
    )


CONVERTERS = {"google-2011": convert_google, "alibaba-2018": convert_alibaba, "alibaba-2017": convert_alibaba}


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
    return events.sort_values(["job_id", "task_index", "timestamp"], kind="stable").reset_index(drop=True)


def event_windows(tasks: pd.DataFrame, grid_origin_us: int, step_us: int) -> pd.DataFrame:
    """Cut each task's life [first SCHEDULE, FINISH] on the trace's 300 s grid."""
    start = tasks["first_schedule"].to_numpy()
    finish = tasks["finish"].to_numpy()
    first_cell = (start - grid_origin_us) // step_us
    last_cell = (finish - 1 - grid_origin_us) // step_us
    counts = (last_cell - first_cell + 1).astype(np.int64)
    row = np.repeat(np.arange(len(tasks)), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    cell = first_cell[row] + offsets
    window_start = np.maximum(grid_origin_us + cell * step_us, start[row])
    window_end = np.minimum(grid_origin_us + (cell + 1) * step_us, finish[row])
    return pd.DataFrame({"row": row, "start": window_start, "end": window_end})


def spill_google_events(
    event_parts: list[Path],
    spill_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = 100,
    priorities=PRODUCTION_PRIORITIES,
    grid_origin: float = 600.0,
    window_seconds: float = 300.0,
    machine_event_parts: list[Path] = (),
) -> dict[str, Any]:
    """Google jobs from task_events alone: per 300 s window of a task's life, its requests,
    priority and scheduling class, the load of its machine (attempts of any job running there
    at the window's end) and its evictions and failures so far, plus the machine's state
    (`stragglers.machines`, with machine_events when given). Latency and task rules are
    those of `convert_google`; no task_usage is read.

    Stage 2 of the events kind: machine load needs every job's events, so all task_events
    parts are one group; writes the window rows per shard and `tasks.parquet` to `spill_dir`."""
    report = ConversionReport(dataset)
    events = read_all_events(list(event_parts), report)
    production = events[events["priority"].isin(priorities)]
    report.count("task_event_rows", len(events))
    report.count("task_event_rows_selected_priorities", len(production))
    tasks = select_google_tasks(task_outcomes(production), min_tasks, report)
    timeline = machine_timeline(events, list(machine_event_parts), report)

    # per-task constants: the first non-missing value of each request on the task's rows
    constant_columns = ["priority", "scheduling_class", "cpu_request", "memory_request", "disk_space_request"]
    firsts = production.groupby(["job_id", "task_index"])[constant_columns].first()
    tasks = tasks.join(firsts, on=["job_id", "task_index"])
    windows = event_windows(tasks, int(grid_origin * US), int(window_seconds * US))
    rows = windows["row"].to_numpy()
    end = windows["end"].to_numpy()
    task_key = rows.astype(np.int64)
    selected = production.merge(tasks[["job_id", "task_index"]].assign(task_key=np.arange(len(tasks))), on=["job_id", "task_index"])
    schedules = selected[selected["event_type"] == schema.EventType.SCHEDULE]
    # machine of each window: the task's latest SCHEDULE at or before the window's end
    sched_keys = _composite(schedules["task_key"].to_numpy(), schedules["timestamp"].to_numpy())
    order = np.argsort(sched_keys, kind="stable")
    sched_keys, sched_machine = sched_keys[order], schedules["machine_id"].to_numpy()[order]
    position = np.searchsorted(sched_keys, _composite(task_key, end), side="right") - 1
    machine = sched_machine[np.maximum(position, 0)]
    counts_for = eviction_and_failure_keys(selected)
    frame = pd.DataFrame(
        {
            "task_key": task_key,
            "window_start": windows["start"].to_numpy() / US,
            "window_end": end / US,
            "available_from": end / US,
        }
    )
    for column in constant_columns:
        frame[column] = tasks[column].to_numpy(float)[rows]
    state = timeline.state(machine, end)
    report.count("windows_machine_unknown", int(np.isnan(state[:, 0]).sum()))
    frame["machine_load"] = np.nan_to_num(state[:, 0], nan=0.0)  # unknown machine: nothing seen running
    frame["evictions_so_far"] = counts_before(counts_for["evictions"], task_key, end).astype(float)
    frame["failures_so_far"] = counts_before(counts_for["failures"], task_key, end).astype(float)
    for column, values in zip(machines.MACHINE_STATE_COLUMNS, state.T):
        frame[column] = values
    report.count("windows_made", len(frame))
    tasks = add_launch_state(tasks, production, timeline, report)
    tasks = add_workload(tasks, production)

    tasks = _assign_shards(tasks, n_shards)
    frame["shard"] = tasks["shard"].to_numpy()[task_key]
    report.phase("task_events")
    with _AtomicFolder(spill_dir) as staging:
        spill = ShardSpill(staging / "shards")
        for shard, piece in frame.groupby("shard"):
            spill.write(int(shard), pa.Table.from_pandas(piece.drop(columns="shard"), preserve_index=False))
        spill.close()
        tasks[TASK_FILE_COLUMNS].to_parquet(staging / TASKS_FILE, index=False)
        _write_report(staging / REPORT_FILE, report)
    return report.as_dict()


@_cleaning_up_on_failure
def convert_google_events(
    raw_dir: Path | str,
    out_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = 100,
    priorities=PRODUCTION_PRIORITIES,
    grid_origin: float = 600.0,
    window_seconds: float = 300.0,
) -> dict[str, Any]:
    """The events-only conversion in one process (see `spill_google_events`)."""
    return _convert_in_one_process(
        Path(out_dir), "google-2011-events", dataset, n_shards, min_tasks,
        spill=lambda folder: spill_google_events(
            list_parts(Path(raw_dir), "task_events"), folder, dataset=dataset, n_shards=n_shards,
            min_tasks=min_tasks, priorities=priorities, grid_origin=grid_origin,
            window_seconds=window_seconds, machine_event_parts=optional_parts(Path(raw_dir), "machine_events"),
        ),
    )


CONVERTERS["google-2011-events"] = convert_google_events
