"""Run one method over a dataset's jobs on the timeline the protocol chooses; a job on which
the method raises is recorded as failed with its reason.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from stragglers.formats.jobs import Job
from stragglers.formats.predictions import JOB_COLUMNS, empty_tasks_frame
from stragglers.methods.base import Method
from stragglers.replay.aligned_replay import replay_aligned_job
from stragglers.replay.core import (
    JobRun,
    ReplaySettings,
    derive_seed,
    straggler_threshold,
)
from stragglers.replay.wallclock import replay_wallclock_job

log = logging.getLogger(__name__)


def replay_job(
    job: Job,
    method: Method,
    settings: ReplaySettings,
    last_columns: np.ndarray,
    seed: int,
    history: Any = None,
) -> JobRun:
    """Run one method over one job on the protocol's timeline; exceptions propagate to the
    caller. `history` (a stragglers.replay.history.JobHistory) reaches cross-job methods only."""
    if settings.rules.timeline == "aligned":
        if method.cross_job:
            # the aligned timeline moves every task to start at 0: "finished before" is lost
            raise ValueError(
                f"method {method.name} learns across jobs and needs the trace's clock; "
                "the aligned timeline (replay.protocol / overrides: timeline) does not keep it"
            )
        return replay_aligned_job(job, method, settings, last_columns, seed)
    return replay_wallclock_job(job, method, settings, last_columns, seed, history=history)


def run_method_on_jobs(
    jobs: Iterator[Job],
    method_class: type[Method],
    params: dict[str, Any],
    settings: ReplaySettings,
    last_columns: np.ndarray,
    seed: int,
    dataset: str,
    history: Any = None,
    label: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replay every job; a job on which the method raises is recorded as failed with its reason.
    `history` (JobHistory of the dataset) is handed to cross-job methods. `label` (default: the
    method's name) names the method in the output and seeds it: a config entry that runs a
    method under its own label (stragglers.methods.method_entry) is its own row."""
    label = label or method_class.name
    task_columns: list[dict[str, Any]] = []  # each replayed job's task rows, as columns
    job_rows: list[dict[str, Any]] = []
    for job in jobs:
        method = method_class(params, seed=derive_seed(seed, label, job.job_id))
        began = time.perf_counter()
        row: dict[str, Any] = {
            "dataset": dataset,
            "method": label,
            "family": method_class.family,
            "privileged": bool(method_class.privileged),
            "job_id": job.job_id,
            "n_tasks": job.n_tasks,
            "job_start": float(job.task_start.min()),
            "job_end": float(job.task_end.max()),
        }
        try:
            run = replay_job(job, method, settings, last_columns, method.seed, history=history)
        except Exception as error:  # a failing method is reported, never silently dropped
            row.update(
                status="failed",
                reason=f"{type(error).__name__}: {error}",
                seconds=time.perf_counter() - began,
                n_checkpoints=0,
                straggler_threshold=(
                    straggler_threshold(
                        job.latency, settings.straggler_quantile, settings.rules.threshold
                    )
                    if settings.rules.timeline == "wallclock"
                    else np.nan
                ),
                prediction_start=np.nan,
            )
            log.error(
                "method %s failed on job %s: %s\n%s",
                label,
                job.job_id,
                row["reason"],
                traceback.format_exc(),
            )
            job_rows.append(row)
            continue
        row.update(
            status="ok",
            reason="",
            seconds=time.perf_counter() - began,
            n_checkpoints=run.n_checkpoints,
            straggler_threshold=run.threshold,
            prediction_start=run.prediction_start,
        )
        latency, task_start, task_end = job.latency, job.task_start, job.task_end
        if run.latency is not None:  # the aligned timeline: every task starts at 0
            latency, task_start, task_end = run.latency, run.task_start, run.task_end
            row.update(job_start=float(task_start.min()), job_end=float(task_end.max()))
        job_rows.append(row)
        task_columns.append(
            {
                "dataset": dataset,
                "method": label,
                "job_id": job.job_id,
                "task": np.arange(job.n_tasks, dtype=np.int32),
                "latency": latency,
                "task_start": task_start,
                "task_end": task_end,
                "is_straggler": latency >= run.threshold,
                "evaluated": run.evaluated,
                "flagged": ~np.isnan(run.flag_time),
                "flag_time": run.flag_time,
                "resume_attempts": (
                    run.resume_attempts
                    if run.resume_attempts is not None
                    else np.full(job.n_tasks, np.nan)
                ),
            }
        )
        log.info(
            "%s on job %s: %d checkpoints, %d flagged, %.2fs",
            label,
            job.job_id,
            run.n_checkpoints,
            int((~np.isnan(run.flag_time)).sum()),
            row["seconds"],
        )
    tasks = tasks_frame(task_columns) if task_columns else empty_tasks_frame()
    jobs_frame = pd.DataFrame(job_rows, columns=JOB_COLUMNS)
    return tasks, jobs_frame


def tasks_frame(jobs: list[dict[str, Any]]) -> pd.DataFrame:
    """The task rows of every job in one frame: `pd.concat` of one DataFrame per job (each
    made of the job's columns, a scalar repeated), built from the columns joined once, which
    costs a frame per shard instead of one per job. Columns whose arrays differ in dtype from
    job to job take pandas' own route, whose casts decide them."""
    lengths = [len(job["task"]) for job in jobs]
    columns: dict[str, np.ndarray] = {}
    for name, first in jobs[0].items():
        if isinstance(first, str):
            # a str scalar in a DataFrame's dict fills an object column
            if not all(isinstance(job[name], str) for job in jobs):
                return per_job_concat(jobs)
            columns[name] = np.repeat(np.array([job[name] for job in jobs], dtype=object), lengths)
            continue
        arrays = [job[name] for job in jobs]
        if not all(
            isinstance(array, np.ndarray) and array.ndim == 1 and array.dtype == first.dtype
            for array in arrays
        ):
            return per_job_concat(jobs)
        columns[name] = np.concatenate(arrays)
    return pd.DataFrame(columns)


def per_job_concat(jobs: list[dict[str, Any]]) -> pd.DataFrame:
    """tasks_frame's definition: one DataFrame per job, concatenated."""
    return pd.concat([pd.DataFrame(job) for job in jobs], ignore_index=True)
