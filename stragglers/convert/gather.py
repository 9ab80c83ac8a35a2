"""Gather (stage 3 of the conversion): one shard's spilled rows -> one Parquet file per job, for
every kind; and the whole conversion in one process (spill, gather every shard, manifest).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from stragglers.convert import machines
from stragglers.convert.alibaba import _write_alibaba_shard
from stragglers.convert.common import (
    ALIBABA_LAYOUTS,
    MACHINE_STATE_FILE,
    TASKS_FILE,
    ConversionReport,
    _AtomicFolder,
    _fresh_staging,
    _write_shard_jobs,
    write_manifest,
)
from stragglers.convert.google import (
    add_machine_usage,
    google_task_table,
    read_spilled_shard,
)
from stragglers.formats.dataset_spec import MIN_TASKS
from stragglers.formats.datasets import TASK_TABLE_KINDS
from stragglers.formats.jobs import manifest_columns


def gather_shard(
    spill_dirs: list[Path | str],
    shard: int,
    jobs_dir: Path | str,
    *,
    kind: str,
    dataset: str,
    min_tasks: int = MIN_TASKS,
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
            rows = _write_alibaba_shard(
                windows, shard, staging, relative, min_tasks, dataset, report, state
            )
        else:
            tasks = pd.read_parquet(tasks_path)
            # only this shard's tasks: the per-task text columns cost time per task
            tasks = tasks[tasks["shard"].to_numpy() == shard]
            if kind == "google-2011":
                windows, tasks = add_machine_usage(windows, tasks, spill_dirs, report)
            # a task table's spill holds the facts in the converted format already
            task_table = tasks if kind in TASK_TABLE_KINDS else google_task_table(tasks)
            rows = _write_shard_jobs(
                windows,
                shard,
                staging,
                relative,
                task_table,
                min_tasks,
                dataset,
                report,
                latency_definition,
            )
    report.phase("write_jobs")
    return pd.DataFrame(rows, columns=manifest_columns(kind)), report.as_dict()


def _convert_in_one_process(
    out_dir: Path,
    kind: str,
    dataset: str,
    n_shards: int,
    min_tasks: int,
    spill,
    tasks_path=None,
    latency_definition: str = "schedule_to_finish",
    prepared_report=None,
) -> dict[str, Any]:
    """The single-job conversion: `spill(spill_dir)` writes one spill folder, then every
    shard is gathered and the manifest written, all under `<out>.tmp`, renamed at the end."""
    staging = _fresh_staging(out_dir)
    reports = [prepared_report] if prepared_report else []
    reports.append(spill(staging / "_spill"))
    if tasks_path is None and (kind == "google-2011-events" or kind in TASK_TABLE_KINDS):
        tasks_path = staging / "_spill" / TASKS_FILE
    manifests = []
    for shard in range(n_shards):
        manifest, report = gather_shard(
            [staging / "_spill"],
            shard,
            staging / "jobs" / f"shard-{shard}",
            kind=kind,
            dataset=dataset,
            min_tasks=min_tasks,
            tasks_path=tasks_path,
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
