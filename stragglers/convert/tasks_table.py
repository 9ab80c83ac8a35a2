"""The task table (dataset kind `tasks-table`, format in stragglers/formats/tasks_table.py) ->
per-job files, by the same rules as the other kinds: a task's latency runs from its first
attempt's start to its finished attempt's end, a job with a task still running is dropped,
windows come from the usage table (or the checkpoint grid), and the features are the table's
own columns (docs/your-own-trace.md, "What the conversion makes of it").

`convert_tasks_table` runs the whole conversion in one process; `spill_tasks_table` is the
`convert_part` stage of the scattered run (stragglers/convert/layout.py).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from stragglers.convert.common import (
    FEATURES_KEY,
    REPORT_FILE,
    TASK_ORDER,
    TASKS_FILE,
    ConversionReport,
    ShardSpill,
    _AtomicFolder,
    _cleaning_up_on_failure,
    _write_report,
    stable_shard,
)
from stragglers.convert.gather import _convert_in_one_process
from stragglers.formats import tasks_table as table_format
from stragglers.formats.dataset_spec import MIN_TASKS
from stragglers.formats.datasets import (
    EVICTIONS_SO_FAR,
    FAILURES_SO_FAR,
    MACHINE_LOAD,
    MACHINE_STATE_BY_KIND,
)
from stragglers.formats.jobs import TASK_FACT_COLUMNS, WINDOW_COLUMNS, launch_columns

log = logging.getLogger(__name__)

KIND = "tasks-table"


def reserved_columns() -> set[str]:
    """Column names the conversion makes, which a usage measurement may not take
    (machine_load is made only without a usage table: a usage table may measure it)."""
    machine_state = [f.column for kind in MACHINE_STATE_BY_KIND.values() for f in kind]
    return {
        *WINDOW_COLUMNS,
        *TASK_FACT_COLUMNS,
        EVICTIONS_SO_FAR,
        FAILURES_SO_FAR,
        *machine_state,
        *launch_columns(machine_state),
        "task_key",
        "shard",
        table_format.ROW,
    }


def count_at_or_before(
    event_key: np.ndarray, event_time: np.ndarray, key: np.ndarray, time: np.ndarray
) -> np.ndarray:
    """For each query (key, time): the events with the same key and event_time <= time.
    Events and queries are sorted together by (key, time, events first), so a query's count is
    the events before it less those of smaller keys; float times, no composite keys."""
    n_events = len(event_key)
    keys = np.concatenate([event_key, key])
    times = np.concatenate([event_time, time])
    is_query = np.r_[np.zeros(n_events, dtype=bool), np.ones(len(key), dtype=bool)]
    order = np.lexsort((is_query, times, keys))
    events_before = np.cumsum(~is_query[order])
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    smaller_keys = np.searchsorted(np.sort(event_key), key, side="left")
    return events_before[position[n_events:]] - smaller_keys


def task_outcomes(attempts: pd.DataFrame, report: ConversionReport) -> pd.DataFrame:
    """One row per task, in the order tasks first appear in the table: job_id, task_id,
    first_row, task_start (first attempt's start), task_end (earliest finished attempt's end,
    NaN if none), machine_id (of that attempt), outcome."""
    key = ["job_id", "task_id"]
    grouped = attempts.groupby(key, sort=False)
    tasks = grouped.agg(first_row=("row", "min"), task_start=("start_time", "min"))
    finished = attempts[attempts["status"] == "finished"].sort_values(
        ["end_time", "row"], kind="stable"
    )
    several = finished.duplicated(key).to_numpy()
    report.count(
        "tasks_with_several_finished_attempts", finished[several][key].drop_duplicates().shape[0]
    )
    first_finish = finished[~several].set_index(key)
    tasks["task_end"] = first_finish["end_time"]
    tasks["machine_id"] = first_finish["machine_id"]
    running = attempts[attempts["status"] == ""].groupby(key, sort=False).size()
    tasks["running"] = running.reindex(tasks.index).fillna(0).to_numpy() > 0
    outcome = np.where(
        tasks["task_end"].notna(),
        "finished",
        np.where(tasks["running"], "running", "not_finished"),
    )
    outcome[(outcome == "finished") & ~(tasks["task_end"] > tasks["task_start"]).to_numpy()] = (
        "zero_latency"
    )
    tasks["outcome"] = outcome
    return tasks.reset_index().sort_values("first_row", kind="stable", ignore_index=True)


def select_tasks(tasks: pd.DataFrame, min_tasks: int, report: ConversionReport) -> pd.DataFrame:
    """Finished tasks of the complete jobs with at least `min_tasks` of them."""
    for outcome, n in tasks["outcome"].value_counts().items():
        report.count(f"tasks_{outcome}", n)
    incomplete = tasks.loc[tasks["outcome"] == "running", "job_id"].unique()
    report.count("jobs_seen", tasks["job_id"].nunique())
    report.count("jobs_dropped_incomplete_in_log", len(incomplete))
    finished = tasks[(tasks["outcome"] == "finished") & ~tasks["job_id"].isin(incomplete)]
    sizes = finished.groupby("job_id").size()
    small = sizes[sizes < min_tasks].index
    report.count("jobs_dropped_below_min_tasks", len(small))
    kept = finished[~finished["job_id"].isin(small)]
    # task_key: tasks by job id, then as they first appear in the table (the tie-break of
    # equal starts in the job file's task order)
    kept = kept.sort_values(["job_id", "first_row"], kind="stable", ignore_index=True)
    kept["task_key"] = np.arange(len(kept), dtype=np.int64)
    return kept


def _grid_windows(start: np.ndarray, end: np.ndarray, origin: float, step: float) -> pd.DataFrame:
    """Each [start, end) cut at the grid origin + k * step (the events kind's windows, in
    float seconds: the task table's clock may have sub-second resolution)."""
    first_cell = np.floor((start - origin) / step).astype(np.int64)
    last_cell = np.ceil((end - origin) / step).astype(np.int64) - 1
    counts = np.maximum(last_cell - first_cell + 1, 1)
    row = np.repeat(np.arange(len(start)), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    cell = first_cell[row] + offsets
    window_start = np.maximum(origin + cell * step, start[row])
    window_end = np.minimum(origin + (cell + 1) * step, end[row])
    keep = window_end > window_start  # a boundary rounded onto an end
    return pd.DataFrame({"row": row[keep], "start": window_start[keep], "end": window_end[keep]})


def _attempts_of_kept(attempts: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """The kept tasks' attempts with their task_key, sorted by (task_key, start, attempt)."""
    keyed = attempts.merge(tasks[["job_id", "task_id", "task_key"]], on=["job_id", "task_id"])
    return keyed.sort_values(
        ["task_key", "start_time", "attempt"], kind="stable", ignore_index=True
    )


def _usage_windows(
    usage: pd.DataFrame,
    usage_path: Path,
    attempts: pd.DataFrame,
    tasks: pd.DataFrame,
    every_attempt: pd.DataFrame,
    report: ConversionReport,
) -> pd.DataFrame:
    """The usage rows of kept tasks inside their life, keyed by task_key, with the attempt's
    row (`attempt_row`, into `attempts`) for its requests. A row naming an attempt the tasks
    table does not have is an error."""
    known = usage.merge(
        every_attempt[["job_id", "task_id", "attempt"]].assign(_known=True),
        on=["job_id", "task_id", "attempt"],
        how="left",
    )
    unknown = known["_known"].isna().to_numpy()
    if unknown.any():
        first = known[unknown].iloc[0]
        raise table_format.TaskTableError(
            f"{usage_path}: row {int(first[table_format.ROW])}, column attempt: attempt "
            f"{first['attempt']} of task {first['task_id']!r} of job {first['job_id']!r} is not "
            f"in the tasks table ({int(unknown.sum())} rows like it)"
        )
    keyed = attempts.assign(attempt_row=np.arange(len(attempts)))[
        ["job_id", "task_id", "attempt", "task_key", "attempt_row"]
    ]
    windows = usage.merge(keyed, on=["job_id", "task_id", "attempt"])
    report.count("usage_rows_read", len(usage))
    report.count("usage_rows_of_dropped_tasks", len(usage) - len(windows))
    task_start = tasks["task_start"].to_numpy()[windows["task_key"].to_numpy()]
    task_end = tasks["task_end"].to_numpy()[windows["task_key"].to_numpy()]
    start, end = windows["window_start"].to_numpy(), windows["window_end"].to_numpy()
    empty = end <= start
    outside = ~empty & ((start < task_start) | (end > task_end))
    report.count("usage_windows_zero_length", int(empty.sum()))
    report.count("usage_windows_outside_task_life", int(outside.sum()))
    return windows[~empty & ~outside].sort_values(table_format.ROW, ignore_index=True)


def _grid_task_windows(
    attempts: pd.DataFrame,
    tasks: pd.DataFrame,
    every_attempt: pd.DataFrame,
    grid_origin: float,
    window_seconds: float,
    with_machine: bool,
    report: ConversionReport,
) -> pd.DataFrame:
    """Each kept task's life cut on the checkpoint grid; each window's attempt is the latest
    started by its end, and (with machine ids) its machine's load then: the attempts of any
    job of the table running there (start <= t < end; still running: until the log ends)."""
    cut = _grid_windows(
        tasks["task_start"].to_numpy(), tasks["task_end"].to_numpy(), grid_origin, window_seconds
    )
    task_key = cut["row"].to_numpy()
    end = cut["end"].to_numpy()
    attempt_key = attempts["task_key"].to_numpy()
    started = count_at_or_before(attempt_key, attempts["start_time"].to_numpy(), task_key, end)
    block_start = np.searchsorted(attempt_key, task_key, side="left")
    windows = pd.DataFrame(
        {
            "task_key": task_key,
            "window_start": cut["start"].to_numpy(),
            "window_end": end,
            "available_from": end,
            "attempt_row": block_start + started - 1,
        }
    )
    if with_machine:
        codes, machines = pd.factorize(every_attempt["machine_id"])
        placed = every_attempt["machine_id"].to_numpy() != ""
        code = codes[placed]
        starts = every_attempt["start_time"].to_numpy()[placed]
        ends = every_attempt["end_time"].to_numpy()[placed]
        machine = attempts["machine_id"].to_numpy()[windows["attempt_row"].to_numpy()]
        query = pd.Index(machines).get_indexer(machine)
        known = (machine != "") & (query >= 0)
        ended = ~np.isnan(ends)
        load = count_at_or_before(code, starts, query, end) - count_at_or_before(
            code[ended], ends[ended], query, end
        )
        windows[MACHINE_LOAD] = np.where(known, load, 0).astype(np.float64)
        report.count("windows_machine_unknown", int((~known).sum()))
    return windows


def spill_tasks_table(
    raw_dir: Path | str,
    spill_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = MIN_TASKS,
    grid_origin: float = 600.0,
    window_seconds: float = 300.0,
) -> dict[str, Any]:
    """Stage 2 of the task table: read and validate `tasks.*` (and `usage.*` if present) in
    `raw_dir`, then `spill_task_frames`. Bad input raises TaskTableError naming the file, the
    row and the column."""
    raw_dir = Path(raw_dir)
    report = ConversionReport(dataset)
    tasks_path = table_format.find_table(raw_dir, "tasks")
    usage_path = table_format.find_table(raw_dir, "usage", required=False)
    report.files_read.append(str(tasks_path))
    every_attempt = table_format.read_tasks(tasks_path)
    report.count("attempt_rows_read", len(every_attempt))
    ignored = table_format.ignored_columns("tasks", _raw_columns(tasks_path))
    if ignored:
        log.warning("%s: columns not used by the conversion: %s", tasks_path, ignored)
    requests = table_format.request_columns(every_attempt.columns)
    usage = None
    if usage_path is not None:
        report.files_read.append(str(usage_path))
        usage = table_format.read_usage(usage_path, reserved_columns() | set(requests))
    return spill_task_frames(
        every_attempt,
        usage,
        spill_dir,
        report=report,
        usage_source=usage_path,
        with_machine="machine_id" in _raw_columns(tasks_path),
        n_shards=n_shards,
        min_tasks=min_tasks,
        grid_origin=grid_origin,
        window_seconds=window_seconds,
    )


def spill_task_frames(
    every_attempt: pd.DataFrame,
    usage: pd.DataFrame | None,
    spill_dir: Path | str,
    *,
    report: ConversionReport,
    usage_source: Path | str | None,
    with_machine: bool,
    n_shards: int,
    min_tasks: int,
    grid_origin: float,
    window_seconds: float,
    tasks_in_table_order: bool = False,
) -> dict[str, Any]:
    """Select the tasks of validated attempt and usage frames (as `read_tasks` and
    `read_usage` return them), build the windows and their features, and write the window
    rows per shard and `tasks.parquet` (the per-task facts) to `spill_dir`, atomically.
    `usage_source` names the usage rows in errors. EV / FL come from the attempts' statuses,
    unless the usage frame carries them as running totals (a reader whose source counts the
    events per window, stragglers/convert/nurd_timeseries.py; a user's usage table may not).
    `tasks_in_table_order`: a job file numbers its tasks as they first appear in the table
    (TASK_ORDER), not by start (a layout whose task order is meaningful: the NURD authors'
    scripts read tasks by index)."""
    requests = table_format.request_columns(every_attempt.columns)
    tasks = select_tasks(task_outcomes(every_attempt, report), min_tasks, report)
    attempts = _attempts_of_kept(every_attempt, tasks)
    if usage is not None:
        windows = _usage_windows(usage, usage_source, attempts, tasks, every_attempt, report)
        measures = [
            c
            for c in table_format.measurement_columns(usage.columns)
            if c not in (EVICTIONS_SO_FAR, FAILURES_SO_FAR)
        ]
    else:
        windows = _grid_task_windows(
            attempts, tasks, every_attempt, grid_origin, window_seconds, with_machine, report
        )
        measures = [MACHINE_LOAD] if with_machine else []
    task_key = windows["task_key"].to_numpy()
    frame = pd.DataFrame(
        {
            "task_key": task_key,
            "window_start": windows["window_start"].to_numpy(np.float64),
            "window_end": windows["window_end"].to_numpy(np.float64),
            "available_from": windows["available_from"].to_numpy(np.float64),
        }
    )
    attempt_row = windows["attempt_row"].to_numpy()
    for column in requests:
        frame[column] = attempts[column].to_numpy()[attempt_row]
    for column in measures:
        frame[column] = windows[column].to_numpy(np.float64)
    # EV / FL: the task's evicted / failed attempts that ended by the time the window is read,
    # counting only those ended by the task's finish (Google counts up to the FINISH)
    finish_of = tasks["task_end"].to_numpy()[attempts["task_key"].to_numpy()]
    for column, status, total in (
        (EVICTIONS_SO_FAR, "evicted", "evictions"),
        (FAILURES_SO_FAR, "failed", "failures"),
    ):
        if column in windows:
            frame[column] = windows[column].to_numpy(np.float64)
            tasks[total] = (
                pd.Series(frame[column].to_numpy())
                .groupby(task_key)
                .max()
                .reindex(np.arange(len(tasks)), fill_value=0)
                .to_numpy(np.int32)
            )
            continue
        rows = attempts[
            (attempts["status"].to_numpy() == status)
            & (attempts["end_time"].to_numpy() <= finish_of)
        ]
        event_key, event_time = rows["task_key"].to_numpy(), rows["end_time"].to_numpy()
        frame[column] = count_at_or_before(
            event_key, event_time, task_key, frame["available_from"].to_numpy()
        ).astype(np.float64)
        tasks[total] = np.bincount(event_key, minlength=len(tasks)).astype(np.int32)
    features = [*requests, *measures, EVICTIONS_SO_FAR, FAILURES_SO_FAR]
    report.count("windows_made", len(frame))
    tasks["latency"] = tasks["task_end"] - tasks["task_start"]
    tasks["shard"] = stable_shard(tasks["job_id"], n_shards)
    frame["shard"] = tasks["shard"].to_numpy()[task_key]
    report.phase("tasks_table")
    with _AtomicFolder(spill_dir) as staging:
        spill = ShardSpill(staging / "shards")
        for shard, piece in frame.groupby("shard"):
            spill.write(
                int(shard), pa.Table.from_pandas(piece.drop(columns="shard"), preserve_index=False)
            )
        spill.close()
        columns = TASK_TABLE_FILE_COLUMNS
        if tasks_in_table_order:
            tasks[TASK_ORDER] = tasks["task_key"].astype(np.float64)
            columns = [*columns, TASK_ORDER]
        tasks[columns].to_parquet(staging / TASKS_FILE, index=False)
        summary = {**report.as_dict(), FEATURES_KEY: features}
        _write_report(staging / REPORT_FILE, summary)
    return summary


# the per-task facts the gather reads (a row's position is its task_key)
TASK_TABLE_FILE_COLUMNS = ["task_key", "job_id", "shard", *TASK_FACT_COLUMNS]


def _raw_columns(path: Path) -> list[str]:
    """The table's header (CSV: its first line; Parquet: its schema)."""
    if path.name.endswith(".parquet"):
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    return list(pd.read_csv(path, nrows=0).columns)


@_cleaning_up_on_failure
def convert_tasks_table(
    raw_dir: Path | str,
    out_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = MIN_TASKS,
    grid_origin: float = 600.0,
    window_seconds: float = 300.0,
    kind: str = KIND,
) -> dict[str, Any]:
    """A folder holding a task table (tasks.{csv,csv.gz,parquet}, optional usage.*) -> the
    converted layout in `out_dir` (jobs/shard-<k>/<job>.parquet, manifest.parquet,
    report.json), written under `<out_dir>.tmp` and renamed only when complete: bad input
    (TaskTableError naming the file, row and column) leaves nothing that looks converted.
    `grid_origin` / `window_seconds`: the checkpoint grid the task lives are cut on when there
    is no usage table (the dataset's replay grid). `kind`: the dataset kind the manifest is
    written for (a kind whose reader writes a task table first, e.g. Spark event logs)."""
    return _convert_in_one_process(
        Path(out_dir),
        kind,
        dataset,
        n_shards,
        min_tasks,
        spill=lambda folder: spill_tasks_table(
            raw_dir,
            folder,
            dataset=dataset,
            n_shards=n_shards,
            min_tasks=min_tasks,
            grid_origin=grid_origin,
            window_seconds=window_seconds,
        ),
    )
