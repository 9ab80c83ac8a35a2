"""A progress score for running tasks, for rules written for Hadoop's progress score.

The traces record no progress score, so the rules that need one (LATE, SRQuant) use this
proxy. The exact definition, per running task i at a checkpoint:

    rate column c   = the first of PROGRESS_RATE_COLUMNS among the job's feature names
                      (Google 2011: "cpu_rate", Alibaba: "cpu_avg", Google events-only:
                      "cpu_request"); none of them present: every task's rate is 1
    work_so_far_i   = max(x_ic, 0) * elapsed_i
                      (x_ic: the task's duration-weighted mean of c over its windows
                      available so far, as the replay builds it; so: CPU-seconds so far)
    work_total_j    = max(x_jc, 0) * latency_j          for every finished task j
    reference_work  = median_j work_total_j             (the typical task's total work)
    progress_i      = min(work_so_far_i / reference_work, 1)       in [0, 1]
    progress_rate_i = progress_i / elapsed_i            (per second; 0 when elapsed_i = 0)

When reference_work is not positive (no finished task, or every finished task's rate is 0)
the proxy falls back to the clock: work is elapsed time (rate 1 for every task), so
progress_i = min(elapsed_i / median finished latency, 1). `ProgressEstimate.basis` says
which definition was used ("work" or "elapsed").

Limits (also in docs/methods.md): the proxy assumes every task of a job has the same
total work (the median's); a task with more input (data skew) looks slow, and a task that has
already done more than the median work is capped at progress 1 (time left 0) while it still
runs. Google's task_usage rate is the mean over the windows available so far, which lag the
checkpoint by up to one window. Alibaba's cpu_avg is a lifetime average shown from the task's
start (docs/deviations.md, deviation 2), so its proxy sees the task's final CPU rate. The events-only
Google dataset has only the CPU *request*, constant over a task's life and usually equal
across a job's tasks, so there the proxy is progress = elapsed / median latency: every
running task has the same rate and no task is slower than another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stragglers.methods.base import Checkpoint

# Feature columns read as "work per second", in order of preference.
PROGRESS_RATE_COLUMNS = ("cpu_rate", "cpu_avg", "cpu_request")


@dataclass(frozen=True)
class ProgressEstimate:
    """Progress of a checkpoint's running tasks (arrays aligned with `running_tasks`)."""

    progress: np.ndarray  # (n_run,) in [0, 1]
    rate: np.ndarray  # (n_run,) progress per second of elapsed time
    work_so_far: np.ndarray  # (n_run,) e.g. CPU-seconds so far
    reference_work: float  # median total work of the finished tasks (> 0)
    column: str | None  # the rate column used, None if the clock was used
    basis: str  # "work" or "elapsed" (clock fallback)


def progress_column(feature_names: Sequence[str]) -> str | None:
    """The feature column used as work per second, or None when the job has none of them."""
    names = list(feature_names)
    for column in PROGRESS_RATE_COLUMNS:
        if column in names:
            return column
    return None


def progress_scores(
    running_rate: np.ndarray,
    running_elapsed: np.ndarray,
    finished_rate: np.ndarray,
    finished_latency: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, str]:
    """The proxy from plain arrays: (progress, rate, work_so_far, reference_work, basis).

    `running_rate` / `finished_rate` are work per second (e.g. mean CPU usage rate); negative
    values count as 0. See the module docstring for the definition and the clock fallback.
    """
    running_rate = np.maximum(np.asarray(running_rate, dtype=np.float64), 0.0)
    elapsed = np.asarray(running_elapsed, dtype=np.float64)
    finished_rate = np.maximum(np.asarray(finished_rate, dtype=np.float64), 0.0)
    latency = np.asarray(finished_latency, dtype=np.float64)
    if running_rate.shape != elapsed.shape:
        raise ValueError(
            f"running_rate {running_rate.shape} and running_elapsed {elapsed.shape} differ"
        )
    if finished_rate.shape != latency.shape:
        raise ValueError(
            f"finished_rate {finished_rate.shape} and finished_latency {latency.shape} differ"
        )
    for name, values in (
        ("running_rate", running_rate),
        ("running_elapsed", elapsed),
        ("finished_rate", finished_rate),
        ("finished_latency", latency),
    ):
        if not np.isfinite(values).all():
            raise ValueError(f"progress proxy: {name} has missing or infinite values")
    if (elapsed < 0).any() or (latency < 0).any():
        raise ValueError("progress proxy: elapsed times and latencies must be >= 0")
    if len(latency) == 0:
        raise ValueError("progress proxy needs at least one finished task")

    basis = "work"
    reference_work = float(np.median(finished_rate * latency))
    work_so_far = running_rate * elapsed
    if not reference_work > 0:
        basis = "elapsed"
        reference_work = float(np.median(latency))
        work_so_far = elapsed.copy()
        if not reference_work > 0:
            raise ValueError("progress proxy: every finished task has latency 0")
    progress = np.minimum(work_so_far / reference_work, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(elapsed > 0, progress / elapsed, 0.0)
    return progress, rate, work_so_far, reference_work, basis


def estimate_progress(checkpoint: Checkpoint, feature_names: Sequence[str]) -> ProgressEstimate:
    """Progress of every running task of `checkpoint` (see the module docstring)."""
    column = progress_column(feature_names)
    n_run = len(checkpoint.running_tasks)
    n_fin = len(checkpoint.finished_tasks)
    if column is None:
        running_rate, finished_rate = np.ones(n_run), np.ones(n_fin)
    else:
        index = list(feature_names).index(column)
        running_rate = np.asarray(checkpoint.running_features)[:, index]
        finished_rate = np.asarray(checkpoint.finished_features)[:, index]
    progress, rate, work, reference, basis = progress_scores(
        running_rate, checkpoint.running_elapsed, finished_rate, checkpoint.finished_latency
    )
    if column is None:
        basis = "elapsed"
    return ProgressEstimate(
        progress=progress,
        rate=rate,
        work_so_far=work,
        reference_work=reference,
        column=column if basis == "work" else None,
        basis=basis,
    )
