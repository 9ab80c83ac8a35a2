"""What every converter shares: the conversion report, staging folders renamed when complete,
shard assignment, the per-job Parquet writer and the manifest.
"""

from __future__ import annotations

import json
import logging
import os
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

from stragglers.convert import machines
from stragglers.formats import raw as schema
from stragglers.formats.datasets import FEATURES_METADATA_KEY, KIND_METADATA_KEY, TASK_TABLE_KINDS
from stragglers.formats.jobs import (
    MANIFEST_WORKLOAD_COLUMNS,
    TASK_FACT_COLUMNS,
    manifest_columns,
)
from stragglers.io import write_atomic
from stragglers.traces.rawcsv import RawTraceError, SkippedRows

log = logging.getLogger(__name__)


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
        raise RawTraceError(
            f"no {table} parts (part-NNNNN-of-MMMMM.csv[.gz]) in {Path(raw_dir) / table}"
        )
    return parts


def optional_parts(raw_dir: Path, table: str) -> list[Path]:
    """Parts of a table the conversion can do without (machine_events): [] if none."""
    folder = Path(raw_dir) / table
    return sorted(folder.glob("part-*-of-*.csv.gz")) + sorted(folder.glob("part-*-of-*.csv"))


# ---------------------------------------------------------------------------------------------
# Google: usage windows -> per-job files
# ---------------------------------------------------------------------------------------------
# Conversion runs as stages so that Snakemake can scatter it (see `stragglers.convert.layout`):
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


# a task-table stage report's feature columns (write_manifest puts them in the manifest)
FEATURES_KEY = "features"


def _assign_shards(tasks: pd.DataFrame, n_shards: int) -> pd.DataFrame:
    """task_key = row position; jobs dealt round-robin to shards in job id order."""
    tasks["task_key"] = np.arange(len(tasks), dtype=np.int64)
    job_ids = np.sort(tasks["job_id"].unique())
    shard_of_job = pd.Series(np.arange(len(job_ids)) % n_shards, index=job_ids)
    tasks["shard"] = shard_of_job.reindex(tasks["job_id"]).to_numpy()
    return tasks


def _write_report(path: Path, report: ConversionReport | dict) -> None:
    summary = report.as_dict() if isinstance(report, ConversionReport) else report
    path.write_text(json.dumps(summary, indent=2) + "\n")


def read_report(path: Path | str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


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
    table = pa.Table.from_pandas(manifest, preserve_index=False)
    table = table.replace_schema_metadata(
        {**(table.schema.metadata or {}), KIND_METADATA_KEY: kind.encode()}
    )
    if kind in TASK_TABLE_KINDS:
        # a task table's features are its own columns: the stage that read it reports them
        features = next(piece[FEATURES_KEY] for piece in reports if FEATURES_KEY in piece)
        summary[FEATURES_KEY] = features
        table = table.replace_schema_metadata(
            {**(table.schema.metadata or {}), FEATURES_METADATA_KEY: json.dumps(features)}
        )
    kept = {
        "jobs_kept": len(manifest),
        "tasks_kept": int(manifest["n_tasks"].sum()) if len(manifest) else 0,
    }
    if kind not in ALIBABA_LAYOUTS:
        kept["windows_kept"] = int(manifest["n_windows"].sum()) if len(manifest) else 0
    summary["counts"] = dict(sorted({**summary["counts"], **kept}.items()))
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "manifest.parquet", lambda path: pq.write_table(table, path))
    write_atomic(out_dir / REPORT_FILE, lambda path: _write_report(path, summary))
    log.info("converted %s: %s", dataset, summary["counts"])
    return summary


# optional column of a task table's spilled facts: the order of a job's tasks in its file (else
# their start; stragglers/convert/tasks_table.spill_task_frames)
TASK_ORDER = "task_order"


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
    facts = {c: task_table[c].to_numpy() for c in TASK_FACT_COLUMNS if c != "latency"}
    facts["latency"] = task_table["latency"].to_numpy()
    facts.update({c: task_table[c].to_numpy() for c in GOOGLE_LAUNCH_COLUMNS if c in task_table})
    workload = {
        c: task_table[c].to_numpy()
        for c in MANIFEST_WORKLOAD_COLUMNS["google-2011"]
        if c in task_table
    }
    rows = []
    # task_key -> row of task_table
    sorted_keys = task_table["task_key"].to_numpy()
    spilled_keys = windows.column("task_key").to_numpy()
    key = np.minimum(np.searchsorted(sorted_keys, spilled_keys), max(len(sorted_keys) - 1, 0))
    if len(key) and (len(sorted_keys) == 0 or np.any(sorted_keys[key] != spilled_keys)):
        raise ValueError(f"shard {shard}: spilled windows of tasks missing from the task table")
    start = windows.column("window_start").to_numpy()
    # tasks by start, unless the task table gives their order (convert/tasks_table.TASK_ORDER)
    task_order = (
        task_table[TASK_ORDER].to_numpy() if TASK_ORDER in task_table else facts["task_start"]
    )
    order = np.lexsort((start, key, task_order[key], job_rank[key]))
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


def stable_shard(keys: pd.Series, n_shards: int) -> np.ndarray:
    """Shard of each job id from a hash of its text: fixed before all jobs are seen."""
    hashed = pd.util.hash_pandas_object(keys.astype(str), index=False, hash_key="stragglers-shard")
    return (hashed.to_numpy() % np.uint64(n_shards)).astype(np.int64)


MACHINE_STATE_FILE = "machine_state.npz"


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
        schema.ALIBABA_2018_BATCH_INSTANCE,
        ("job_name", "task_name"),
        "instance_name",
        "batch_instance.tar.gz",
        "batch_instance.csv",
    ),
    "alibaba-2017": AlibabaLayout(
        schema.ALIBABA_2017_BATCH_INSTANCE,
        ("job_id", "task_id"),
        None,
        "alibaba-trace-2017.tar.gz",
        "batch_instance.csv",
    ),
}


# every per-task launch column of the Google kinds: the timeline's and the task_usage one's
GOOGLE_LAUNCH_COLUMNS = machines.launch_columns(
    machines.MACHINE_STATE_COLUMNS + machines.MACHINE_USAGE_COLUMNS
)
