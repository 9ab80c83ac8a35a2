"""Google clusterdata-2011-2 from task_events alone (kind `google-2011-events`): windows on the
checkpoint grid, features from the task's requests and its eviction/failure counts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from stragglers.convert import machines
from stragglers.convert.common import (
    REPORT_FILE,
    TASKS_FILE,
    US,
    ConversionReport,
    ShardSpill,
    _assign_shards,
    _AtomicFolder,
    _write_report,
)
from stragglers.convert.google import (
    TASK_FILE_COLUMNS,
    _composite,
    add_launch_state,
    add_workload,
    counts_before,
    eviction_and_failure_keys,
    machine_timeline,
    read_all_events,
    select_google_tasks,
    task_outcomes,
)
from stragglers.formats import raw as schema
from stragglers.formats.dataset_spec import MIN_TASKS, PRODUCTION_PRIORITIES


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
    min_tasks: int = MIN_TASKS,
    priorities=PRODUCTION_PRIORITIES,
    grid_origin: float = 600.0,
    window_seconds: float = 300.0,
    machine_event_parts: list[Path] = (),
) -> dict[str, Any]:
    """Google jobs from task_events alone: per 300 s window of a task's life, its requests,
    priority and scheduling class, the load of its machine (attempts of any job running there
    at the window's end) and its evictions and failures so far, plus the machine's state
    (`stragglers.convert.machines`, with machine_events when given). Latency and task rules are
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
    constant_columns = [
        "priority",
        "scheduling_class",
        "cpu_request",
        "memory_request",
        "disk_space_request",
    ]
    firsts = production.groupby(["job_id", "task_index"])[constant_columns].first()
    tasks = tasks.join(firsts, on=["job_id", "task_index"])
    windows = event_windows(tasks, int(grid_origin * US), int(window_seconds * US))
    rows = windows["row"].to_numpy()
    end = windows["end"].to_numpy()
    task_key = rows.astype(np.int64)
    selected = production.merge(
        tasks[["job_id", "task_index"]].assign(task_key=np.arange(len(tasks))),
        on=["job_id", "task_index"],
    )
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
    frame["machine_load"] = np.nan_to_num(
        state[:, 0], nan=0.0
    )  # unknown machine: nothing seen running
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
            spill.write(
                int(shard), pa.Table.from_pandas(piece.drop(columns="shard"), preserve_index=False)
            )
        spill.close()
        tasks[TASK_FILE_COLUMNS].to_parquet(staging / TASKS_FILE, index=False)
        _write_report(staging / REPORT_FILE, report)
    return report.as_dict()
