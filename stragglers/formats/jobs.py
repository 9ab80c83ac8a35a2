"""The converted per-job format shared by conversion, replay and evaluation: one Parquet file
per trace job, one row per measurement window of a task (its features, and the task's own
columns repeated), plus one manifest per dataset listing the jobs kept (`read_job`,
`read_manifest`, `iter_shard_jobs`). The columns: docs/definitions.md ("The converted files").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from stragglers.formats.datasets import TASK_TABLE_KINDS, feature_columns, machine_state_columns

WINDOW_COLUMNS = ["task", "window_start", "window_end", "available_from"]
# per-task facts, repeated on each of the task's window rows of a converted job file
TASK_FACT_COLUMNS = [
    "task_id",
    "task_start",
    "task_end",
    "latency",
    "machine_id",
    "evictions",
    "failures",
]
MANIFEST_COLUMNS = [
    "dataset",
    "job_id",
    "n_tasks",
    "n_windows",
    "shard",
    "path",
    "job_start",
    "job_end",
]
MANIFEST_WORKLOAD_COLUMNS = {
    "google-2011": ["workload_user", "workload_scheduling_class"],
    "google-2011-events": ["workload_user", "workload_scheduling_class"],
    "alibaba-2018": ["workload_task_type", "workload_task_family"],
    "alibaba-2017": [],
    **{kind: [] for kind in TASK_TABLE_KINDS},
}


def manifest_columns(kind: str) -> list[str]:
    return MANIFEST_COLUMNS + MANIFEST_WORKLOAD_COLUMNS.get(kind, [])


@dataclass
class Job:
    """One converted job, in arrays: windows sorted by (available_from, task)."""

    job_id: str
    feature_names: list[str]
    # windows
    window_task: np.ndarray  # int, task position
    window_start: np.ndarray
    window_end: np.ndarray
    available_from: np.ndarray
    window_features: np.ndarray  # (n_windows, d)
    # tasks
    task_id: np.ndarray  # str
    task_start: np.ndarray
    task_end: np.ndarray
    latency: np.ndarray
    machine_id: np.ndarray
    evictions: np.ndarray
    failures: np.ndarray
    # the machine's state, when read (machine_state columns)
    machine_state_names: list[str] = field(default_factory=list)
    window_machine_state: np.ndarray | None = None  # (n_windows, m), at each window's end
    launch_machine_state: np.ndarray | None = None  # (n_tasks, m), just before each task started

    @property
    def n_tasks(self) -> int:
        return len(self.latency)


LAUNCH_PREFIX = "launch_"


def launch_columns(machine_state) -> list[str]:
    """The per-task columns of the machine state just before each task started."""
    return [LAUNCH_PREFIX + c for c in machine_state]


def job_from_frame(
    job_id: str, frame: pd.DataFrame, feature_names: list[str], machine_state: list[str] = ()
) -> Job:
    """Split a converted job's window rows into window arrays and per-task arrays."""
    missing = [c for c in WINDOW_COLUMNS + TASK_FACT_COLUMNS + feature_names if c not in frame]
    if missing:
        raise ValueError(f"job {job_id}: converted file lacks columns {missing}")
    machine_state = list(machine_state)
    launch = launch_columns(machine_state)
    missing = [c for c in machine_state + launch if c not in frame]
    if missing:
        raise ValueError(
            f"job {job_id}: converted file lacks the machine state columns {missing}: it was "
            "converted before they existed; delete resources/converted/<dataset> and rerun"
        )
    frame = frame.sort_values(["available_from", "task", "window_start"], kind="stable")
    tasks = frame.drop_duplicates("task").sort_values("task")
    n_tasks = len(tasks)
    if not np.array_equal(tasks["task"].to_numpy(), np.arange(n_tasks)):
        raise ValueError(f"job {job_id}: task positions are not dense 0..{n_tasks - 1}")
    return Job(
        job_id=str(job_id),
        feature_names=list(feature_names),
        window_task=frame["task"].to_numpy(np.int64),
        window_start=frame["window_start"].to_numpy(np.float64),
        window_end=frame["window_end"].to_numpy(np.float64),
        available_from=frame["available_from"].to_numpy(np.float64),
        window_features=frame[feature_names].to_numpy(np.float64),
        task_id=tasks["task_id"].astype(str).to_numpy(),
        task_start=tasks["task_start"].to_numpy(np.float64),
        task_end=tasks["task_end"].to_numpy(np.float64),
        latency=tasks["latency"].to_numpy(np.float64),
        machine_id=tasks["machine_id"].astype(str).to_numpy(),
        evictions=tasks["evictions"].to_numpy(np.int64),
        failures=tasks["failures"].to_numpy(np.int64),
        machine_state_names=machine_state,
        window_machine_state=frame[machine_state].to_numpy(np.float64) if machine_state else None,
        launch_machine_state=tasks[launch].to_numpy(np.float64) if machine_state else None,
    )


class ConvertedFileError(RuntimeError):
    """A converted job file (or the manifest) is missing, truncated or not a converted job
    file; the message names the file and the command that rebuilds it."""


def rebuild_hint(path: str | Path) -> str:
    """The command that rebuilds the converted dataset `path` belongs to (files live under
    `<converted dir>/jobs/shard-<k>/`, the manifest at `<converted dir>/manifest.parquet`)."""
    path = Path(path)
    converted_dir = path.parents[2] if path.parent.name.startswith("shard-") else path.parent
    return (
        f"rebuild the conversion: snakemake --cores 2 --forcerun convert_manifest gather_shard "
        f"{converted_dir / 'manifest.parquet'}"
    )


def converted_columns(path: str | Path) -> list[str]:
    """The columns of a converted job file; a missing or unreadable file is a
    ConvertedFileError naming it (pyarrow's own messages name a buffer, not the file)."""
    path = Path(path)
    if not path.exists():
        raise ConvertedFileError(f"{path}: converted job file missing; {rebuild_hint(path)}")
    try:
        return pq.read_schema(path).names
    except Exception as error:  # truncated, or not Parquet at all
        raise ConvertedFileError(
            f"{path}: not a readable Parquet file ({type(error).__name__}: {error}); "
            f"{rebuild_hint(path)}"
        ) from None


def read_converted(path: str | Path, columns: list[str]) -> pd.DataFrame:
    """`columns` of a converted job file, or a ConvertedFileError naming the file. A good file
    is read once; only a failed read looks at the file again to say what is wrong with it."""
    try:
        return pd.read_parquet(path, columns=columns)
    except Exception as error:
        explain_unreadable(path, columns, error)


def read_converted_table(path: str | Path, columns: list[str]) -> pa.Table:
    """`columns` of a converted job file as an Arrow table (read_converted without pandas:
    a job's replay reads its file once, and pandas' frame costs more than the read), or a
    ConvertedFileError naming the file."""
    try:
        # an open file: pyarrow resolves no filesystem for it
        with pa.OSFile(str(path)) as source:
            return pq.ParquetFile(source).read(columns=columns, use_threads=False)
    except Exception as error:
        explain_unreadable(path, columns, error)


def explain_unreadable(path: str | Path, columns: list[str], error: Exception) -> NoReturn:
    """Raise the ConvertedFileError that says why reading `columns` of `path` failed."""
    present = set(converted_columns(path))  # raises for a missing or unreadable file
    missing = [c for c in columns if c not in present]
    if missing:
        raise ConvertedFileError(
            f"{path}: not a converted job file of this dataset: columns {missing} missing; "
            f"{rebuild_hint(path)}"
        ) from None
    raise ConvertedFileError(  # e.g. a file damaged after its footer
        f"{path}: cannot be read ({type(error).__name__}: {error}); {rebuild_hint(path)}"
    ) from None


def job_from_table(
    job_id: str, table: pa.Table, feature_names: list[str], machine_state: list[str] = ()
) -> Job | None:
    """job_from_frame's Job built from the Arrow columns with numpy alone: the same arrays,
    dtypes and memory layout (2-D blocks column-major, as pandas hands them out), the window
    order of its stable sort and each task's facts from its first row in that order. None
    when a column is not of the types the converted format writes (a null in an integer or
    string column, an integer feature): job_from_frame's pandas conversions decide those."""
    machine_state = list(machine_state)
    float_columns = ["window_start", "window_end", "available_from", "task_start", "task_end"]
    float_columns += ["latency", *feature_names, *machine_state, *launch_columns(machine_state)]
    names = set(table.column_names)
    if not all(c in names for c in WINDOW_COLUMNS + TASK_FACT_COLUMNS + float_columns):
        return None  # job_from_frame names what is missing
    for name in float_columns:
        if not pa.types.is_float64(table.schema.field(name).type):
            return None
    for name in ("task", "evictions", "failures"):
        if not pa.types.is_integer(table.schema.field(name).type) or table[name].null_count:
            return None
    for name in ("task_id", "machine_id"):
        column = table[name]
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            return None
        if column.null_count:
            return None
    task = table["task"].to_numpy()
    available_from = table["available_from"].to_numpy()
    window_start = table["window_start"].to_numpy()
    # DataFrame.sort_values over several keys, stable: numpy's lexsort (last key first) on the
    # same keys gives the same order (ties keep file order, NaN last, -0.0 == 0.0)
    order = np.lexsort((window_start, task, available_from))
    task = task[order]
    # drop_duplicates("task").sort_values("task"): each task's first row in the sorted order
    positions, first_rows = np.unique(task, return_index=True)
    n_tasks = len(positions)
    if not np.array_equal(positions, np.arange(n_tasks)):
        raise ValueError(f"job {job_id}: task positions are not dense 0..{n_tasks - 1}")
    task_rows = order[first_rows]

    def windows(name: str) -> np.ndarray:
        return table[name].to_numpy()[order]

    def block(columns: list[str], rows: np.ndarray) -> np.ndarray:
        # pandas keeps a dtype's columns as one (columns, rows) block and hands out its
        # transpose; the same layout keeps numpy's reductions over it summing in one order
        out = np.empty((len(columns), len(rows)))
        for i, name in enumerate(columns):
            out[i] = table[name].to_numpy()[rows]
        return out.T

    def facts(name: str, dtype=None) -> np.ndarray:
        values = table[name].take(task_rows).to_numpy(zero_copy_only=False)
        return values if dtype is None else values.astype(dtype)

    return Job(
        job_id=str(job_id),
        feature_names=list(feature_names),
        window_task=task.astype(np.int64),
        window_start=window_start[order],
        window_end=windows("window_end"),
        available_from=available_from[order],
        window_features=block(feature_names, order),
        task_id=facts("task_id"),
        task_start=facts("task_start"),
        task_end=facts("task_end"),
        latency=facts("latency"),
        machine_id=facts("machine_id"),
        evictions=facts("evictions", np.int64),
        failures=facts("failures", np.int64),
        machine_state_names=machine_state,
        window_machine_state=block(machine_state, order) if machine_state else None,
        launch_machine_state=(
            block(launch_columns(machine_state), task_rows) if machine_state else None
        ),
    )


def read_job(
    path: str | Path, job_id: str, feature_names: list[str], machine_state: list[str] = ()
) -> Job:
    """`machine_state`: machine columns to read too (`stragglers.formats.datasets.machine_state_columns`)."""
    wanted = list(machine_state) + launch_columns(machine_state)
    columns = WINDOW_COLUMNS + TASK_FACT_COLUMNS + list(feature_names)
    if wanted:
        present = set(converted_columns(path))
        missing = [c for c in wanted if c not in present]
        if missing:
            raise ValueError(
                f"{path}: converted file lacks the machine state columns {missing}: it was "
                "converted before they existed (or its dataset kind has none); delete "
                "resources/converted/<dataset> and rerun"
            )
    job = job_from_table(
        job_id, read_converted_table(path, columns + wanted), feature_names, machine_state
    )
    if job is not None:
        return job
    frame = read_converted(path, columns + wanted)
    return job_from_frame(job_id, frame, feature_names, machine_state)


def read_manifest(converted_dir: Path | str) -> pd.DataFrame:
    path = Path(converted_dir) / "manifest.parquet"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no manifest; run the conversion first")
    try:
        return pd.read_parquet(path)
    except Exception as error:
        raise ConvertedFileError(
            f"{path}: cannot be read ({type(error).__name__}: {error}); {rebuild_hint(path)}"
        ) from None


def tuning_job_ids(manifest: pd.DataFrame, n_jobs: int) -> list[str]:
    """The paper's tuning protocol sets aside a few jobs per dataset (6): here the first
    `n_jobs` by job id (the paper's Alibaba choice; its six Google jobs are not identified)."""
    return sorted(manifest["job_id"].astype(str))[:n_jobs] if n_jobs > 0 else []


def iter_shard_jobs(
    converted_dir: Path | str,
    kind: str,
    shard: int | None,
    skip_tuning_jobs: int = 0,
    only_jobs: list[str] | None = None,
    machine_state: bool = False,
) -> Iterator[Job]:
    """Jobs of one shard (None: all shards), without the tuning jobs, or only `only_jobs`;
    with `machine_state`, the kind's machine state columns too."""
    manifest = read_manifest(converted_dir)
    features = feature_columns(kind, converted_dir)
    machine = machine_state_columns(kind) if machine_state else []
    selected = manifest if shard is None else manifest[manifest["shard"] == shard]
    if only_jobs is not None:
        selected = selected[selected["job_id"].astype(str).isin(only_jobs)]
    tuning = set(tuning_job_ids(manifest, skip_tuning_jobs))
    for row in selected.sort_values("job_id").itertuples():
        if str(row.job_id) in tuning:
            continue
        yield read_job(Path(converted_dir) / row.path, row.job_id, features, machine)
