"""The online replay of a job (the paper's Algorithm 1 protocol).

Checkpoints lie on the trace's window grid (every `checkpoint_interval` seconds from
`grid_origin`). At a checkpoint `t` a method sees:

- finished tasks (task_end <= t): their features over their whole life and their latency;
- running tasks (task_start <= t < task_end) not flagged yet and with at least one window
  available by `t`: features built only from windows available by `t`, and elapsed time.

Prediction starts at the first checkpoint where at least `start_fraction` of the job's tasks
have finished. A flagged task is not evaluated again. Nothing after `t` reaches the method: the
feature accumulator only ever adds windows whose `available_from <= t`.

The protocol's rules (stragglers/protocol.py: `replay.protocol` plus `replay.overrides`) pick
the timeline and how features, scaling, the threshold and the scored set are built; the
aligned timeline of the reference script is in stragglers/aligned.py.
`protocol="reference"` reproduces three choices of the paper's reference code that use
information from the future, so their effect can be measured (README, deviations):
running-task features weighted by window duration / the task's *final* latency; features
min-max scaled with statistics of all tasks' final feature vectors; and tasks dropped from the
evaluation by their final length (stragglers shorter than the mean straggler window count - 1,
non-stragglers that finish after the 4% training set and are longer than their mean + 1).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from stragglers.aligned import FinalScale, final_scale
from stragglers.jobdata import Job
from stragglers.methods.base import Checkpoint, JobInfo, Method
from stragglers.protocol import PROTOCOLS, ProtocolRules, resolve_rules  # noqa: F401

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplaySettings:
    checkpoint_interval: float = 300.0
    grid_origin: float = 600.0
    start_fraction: float = 0.04
    straggler_quantile: float = 0.90
    protocol: str = "causal"
    overrides: dict[str, Any] | None = None  # rules flipped from the protocol's preset

    def __post_init__(self) -> None:
        resolve_rules(self.protocol, self.overrides)  # raises naming the setting
        if not 0.5 <= self.straggler_quantile < 1.0:
            raise ValueError(
                f"replay.straggler_quantile must be in [0.5, 1), got {self.straggler_quantile}"
            )
        if not 0.0 < self.start_fraction < 1.0:
            raise ValueError(f"replay.start_fraction must be in (0, 1), got {self.start_fraction}")
        if self.checkpoint_interval <= 0:
            raise ValueError("replay.checkpoint_interval must be positive")

    @property
    def rules(self) -> ProtocolRules:
        return resolve_rules(self.protocol, self.overrides)


def straggler_threshold(latency: np.ndarray, quantile: float, protocol: str = "causal") -> float:
    """The job's latency quantile (p90 by default); tasks at or above it are stragglers."""
    latency = np.asarray(latency, dtype=float)
    if protocol in ("reference", "sorted_index"):
        # the reference code indexes the sorted latencies at int(q * n)
        return float(np.sort(latency)[int(quantile * len(latency))])
    return float(np.quantile(latency, quantile))


def checkpoint_times(task_start: np.ndarray, task_end: np.ndarray, settings: ReplaySettings) -> np.ndarray:
    """Grid times after the first task starts, up to the first grid time at or after the last end."""
    step, origin = settings.checkpoint_interval, settings.grid_origin
    first = math.floor((float(np.min(task_start)) - origin) / step) + 1
    last = math.ceil((float(np.max(task_end)) - origin) / step)
    return origin + step * np.arange(first, max(first, last) + 1, dtype=float)


def prediction_start_count(n_tasks: int, start_fraction: float) -> int:
    """Number of finished tasks needed before prediction starts (at least 2 to train on)."""
    return max(2, math.ceil(start_fraction * n_tasks - 1e-9))


def derive_seed(seed: int, *names: str) -> int:
    """A stable 32-bit seed from the config seed and names (method, job): no Python hash()."""
    digest = hashlib.sha256("\x1f".join([str(seed), *names]).encode()).digest()
    return int.from_bytes(digest[:4], "little")


class FeatureAccumulator:
    """Running per-task sums of window values, fed in `available_from` order.

    `mean` columns: sum(value * duration) / sum(duration) over the windows added so far,
    ignoring missing values; `last` columns: value of the latest window added.
    """

    def __init__(
        self, job: Job, last_columns: np.ndarray, divide_by_final_latency: bool = False,
        window_values: np.ndarray | None = None,
    ):
        """`window_values`: another (n_windows, d) block than the job's features (the
        machine state)."""
        values = job.window_features if window_values is None else window_values
        n, d = job.n_tasks, values.shape[1]
        self.job = job
        self.window_values = values
        self.is_last = np.asarray(last_columns, dtype=bool)
        self.weighted_sum = np.zeros((n, d))
        self.weight = np.zeros((n, d))
        self.last_value = np.full((n, d), np.nan)
        self.n_windows = np.zeros(n, dtype=np.int64)
        self.position = 0
        self.divide_by_final_latency = divide_by_final_latency
        durations = job.window_end - job.window_start
        present = ~np.isnan(values)
        self._weighted_values = np.where(present, values, 0.0) * durations[:, None]
        self._weights = present * durations[:, None]

    def advance(self, t: float) -> None:
        """Add every window with available_from <= t (windows are sorted by it)."""
        job = self.job
        stop = int(np.searchsorted(job.available_from, t, side="right"))
        if stop <= self.position:
            return
        sl = slice(self.position, stop)
        tasks = job.window_task[sl]
        np.add.at(self.weighted_sum, tasks, self._weighted_values[sl])
        np.add.at(self.weight, tasks, self._weights[sl])
        np.add.at(self.n_windows, tasks, 1)
        # windows are sorted by available_from, so the last write per task is its latest window
        values = self.window_values[sl]
        for column in np.flatnonzero(self.is_last):
            present = ~np.isnan(values[:, column])
            self.last_value[tasks[present], column] = values[present, column]
        self.position = stop

    def features(self, tasks: np.ndarray) -> np.ndarray:
        if self.divide_by_final_latency:
            # reference code: sum(duration_w * value_w) / final latency, a leak by design
            out = self.weighted_sum[tasks] / self.job.latency[tasks, None]
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                out = self.weighted_sum[tasks] / self.weight[tasks]
            out[:, self.is_last] = self.last_value[np.ix_(tasks, np.flatnonzero(self.is_last))]
        return out


def fill_missing(*blocks: np.ndarray) -> list[np.ndarray]:
    """Replace NaN by the column mean of the rows available now (0 if none)."""
    stacked = np.vstack(blocks) if blocks else np.empty((0, 0))
    with np.errstate(invalid="ignore"):
        means = np.nanmean(stacked, axis=0) if len(stacked) else np.zeros(stacked.shape[1])
    means = np.where(np.isnan(means), 0.0, means)
    return [np.where(np.isnan(b), means, b) for b in blocks]


def reference_dropped_tasks(job: Job, threshold: float, start_fraction: float) -> np.ndarray:
    """Tasks the reference code removes by their final length (window count): a leak."""
    n_windows = np.bincount(job.window_task, minlength=job.n_tasks)
    return pruned_tasks(job.latency, n_windows, threshold, start_fraction)


def pruned_tasks(
    latency: np.ndarray, n_windows: np.ndarray, threshold: float, start_fraction: float
) -> np.ndarray:
    """Rule 5 (pruning of the scored set): stragglers with fewer windows than their mean - 1
    and non-stragglers between the int(start_fraction * n) cut and tau with more windows than
    their mean + 1."""
    latency = np.asarray(latency, dtype=float)
    stragglers = latency >= threshold
    training_cut = np.sort(latency)[int(start_fraction * len(latency))]
    gap = (~stragglers) & (latency >= training_cut)
    dropped = np.zeros(len(latency), dtype=bool)
    if stragglers.any():
        dropped |= stragglers & (n_windows < n_windows[stragglers].mean() - 1)
    if gap.any():
        dropped |= gap & (n_windows > n_windows[gap].mean() + 1)
    return dropped


@dataclass
class JobRun:
    """What one method did on one job."""

    flag_time: np.ndarray  # NaN where never flagged
    evaluated: np.ndarray  # bool
    threshold: float
    n_checkpoints: int  # checkpoints at which the method was asked to predict
    prediction_start: float  # NaN if prediction never started
    # the task timeline the run used when it is not the trace's (aligned timeline)
    latency: np.ndarray | None = None
    task_start: np.ndarray | None = None
    task_end: np.ndarray | None = None
    # r + 1 the method chose for each flagged task's speculative resume; NaN = policy default
    resume_attempts: np.ndarray | None = None


def iterate_checkpoints(
    job: Job,
    settings: ReplaySettings,
    last_columns: np.ndarray,
    flagged: np.ndarray,
    excluded: np.ndarray,
    scale: FinalScale | None = None,
    machine_state: bool = False,
) -> Iterator[Checkpoint]:
    """Yield the checkpoints at which prediction runs. `flagged` is read live (the caller
    updates it between yields), so flagged tasks drop out of later checkpoints. With `scale`
    (rule `scaling: final`) features and latencies are min-max scaled by all tasks' final
    values."""
    accumulator = FeatureAccumulator(
        job, last_columns,
        divide_by_final_latency=settings.rules.features == "divided_by_final",
    )
    machines = None
    if machine_state and job.window_machine_state is not None:
        n_columns = job.window_machine_state.shape[1]
        machines = FeatureAccumulator(
            job, np.ones(n_columns, dtype=bool), window_values=job.window_machine_state
        )
    times = checkpoint_times(job.task_start, job.task_end, settings)
    needed = prediction_start_count(int((~excluded).sum()), settings.start_fraction)
    started = False
    k0 = round((times[0] - settings.grid_origin) / settings.checkpoint_interval) if len(times) else 0
    for k, t in enumerate(times):
        accumulator.advance(t)
        if machines is not None:
            machines.advance(t)
        finished = np.flatnonzero((job.task_end <= t) & ~excluded)
        if not started and len(finished) < needed:
            continue
        running_mask = (
            (job.task_start <= t)
            & (job.task_end > t)
            & ~flagged
            & ~excluded
            & (accumulator.n_windows > 0)
        )
        running = np.flatnonzero(running_mask)
        if len(running) == 0:
            continue
        finished_features = accumulator.features(finished)
        running_features = accumulator.features(running)
        finished_latency = job.latency[finished]
        running_elapsed = t - job.task_start[running]
        if scale is not None:
            finished_features = scale.features(finished_features)
            running_features = scale.features(running_features)
            finished_latency = scale.latency(finished_latency)
            running_elapsed = scale.latency(running_elapsed)
        finished_features, running_features = fill_missing(finished_features, running_features)
        state = {}
        if machines is not None:
            state = {
                "finished_machine_state": machines.features(finished),
                "running_machine_state": machines.features(running),
                "finished_launch_state": job.launch_machine_state[finished],
                "running_launch_state": job.launch_machine_state[running],
            }
        yield Checkpoint(
            time=float(t),
            index=int(k0 + k),
            first_prediction=not started,
            finished_tasks=finished,
            finished_features=finished_features,
            finished_latency=finished_latency,
            running_tasks=running,
            running_features=running_features,
            running_elapsed=running_elapsed,
            prescaled=scale is not None,
            **state,
        )
        started = True


def replay_job(
    job: Job,
    method: Method,
    settings: ReplaySettings,
    last_columns: np.ndarray,
    seed: int,
    history: Any = None,
) -> JobRun:
    """Run one method over one job's checkpoints; exceptions propagate to the caller.
    `history` (a stragglers.history.JobHistory) reaches cross-job methods only."""
    rules = settings.rules
    if method.cross_job and rules.timeline == "aligned":
        # the aligned timeline moves every task to start at 0: "finished before" is lost
        raise ValueError(
            f"method {method.name} learns across jobs and needs the trace's clock; "
            "the aligned timeline (replay.protocol / overrides: timeline) does not keep it"
        )
    if rules.timeline == "aligned":
        from stragglers.paper import replay_aligned_job

        return replay_aligned_job(job, method, settings, last_columns, seed)
    threshold = straggler_threshold(job.latency, settings.straggler_quantile, rules.threshold)
    excluded = np.zeros(job.n_tasks, dtype=bool)
    scale = None
    if rules.prune_scored:
        excluded |= reference_dropped_tasks(job, threshold, settings.start_fraction)
    if rules.scaling == "final":
        final = FeatureAccumulator(
            job, last_columns, divide_by_final_latency=rules.features == "divided_by_final"
        )
        final.advance(np.inf)
        scale = final_scale(final.features(np.arange(job.n_tasks)), job.latency)
    feature_names = tuple(job.feature_names)
    model_threshold, model_latency = threshold, job.latency
    if scale is not None:
        feature_names = tuple(np.asarray(job.feature_names)[scale.keep])
        model_threshold = float(scale.latency(threshold))
        model_latency = scale.latency(job.latency)
    info = JobInfo(
        job_id=job.job_id,
        n_tasks=job.n_tasks,
        feature_names=feature_names,
        straggler_threshold=model_threshold,
        seed=seed,
        true_latency=np.array(model_latency, dtype=float) if method.privileged else None,
        history=history if method.cross_job else None,
        job_start=float(job.task_start.min()) if method.cross_job else float("nan"),
        machine_state_names=tuple(job.machine_state_names) if method.uses_machine_state else (),
        regressor=rules.regressor,
    )
    method.start_job(info)
    # tasks a privileged method trains on with their labels stay in the replay (it needs
    # their features) but are not scored
    not_scored = np.zeros(job.n_tasks, dtype=bool)
    trained_on = method.excluded_from_evaluation()
    if trained_on is not None and len(trained_on):
        not_scored[np.asarray(trained_on, dtype=int)] = True
    flagged = np.zeros(job.n_tasks, dtype=bool)
    flag_time = np.full(job.n_tasks, np.nan)
    resume_attempts = np.full(job.n_tasks, np.nan)
    n_checkpoints = 0
    prediction_start = np.nan
    for checkpoint in iterate_checkpoints(
        job, settings, last_columns, flagged, excluded, scale, machine_state=method.uses_machine_state
    ):
        if checkpoint.first_prediction:
            prediction_start = checkpoint.time
        decision = np.asarray(method.predict(checkpoint))
        if decision.shape != checkpoint.running_tasks.shape:
            raise ValueError(
                f"method {method.name} returned {decision.shape} decisions for "
                f"{checkpoint.running_tasks.shape[0]} running tasks at t={checkpoint.time}"
            )
        if decision.dtype != bool:
            raise TypeError(f"method {method.name} returned {decision.dtype}, expected bool")
        newly = checkpoint.running_tasks[decision]
        flagged[newly] = True
        flag_time[newly] = checkpoint.time
        attempts = method.resume_attempts() if newly.size else None
        if attempts is not None:
            resume_attempts[newly] = int(attempts)
        n_checkpoints += 1
    return JobRun(
        flag_time=flag_time,
        evaluated=~excluded & ~not_scored,
        threshold=threshold,
        n_checkpoints=n_checkpoints,
        prediction_start=prediction_start,
        resume_attempts=resume_attempts,
    )


def run_method_on_jobs(
    jobs: Iterator[Job],
    method_class: type[Method],
    params: dict[str, Any],
    settings: ReplaySettings,
    last_columns: np.ndarray,
    seed: int,
    dataset: str,
    history: Any = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replay every job; a job on which the method raises is recorded as failed with its reason.
    `history` (JobHistory of the dataset) is handed to cross-job methods."""
    task_frames: list[pd.DataFrame] = []
    job_rows: list[dict[str, Any]] = []
    for job in jobs:
        method = method_class(params, seed=derive_seed(seed, method_class.name, job.job_id))
        began = time.perf_counter()
        row: dict[str, Any] = {
            "dataset": dataset,
            "method": method_class.name,
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
                method_class.name,
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
        task_frames.append(
            pd.DataFrame(
                {
                    "dataset": dataset,
                    "method": method_class.name,
                    "job_id": job.job_id,
                    "task": np.arange(job.n_tasks, dtype=np.int32),
                    "latency": latency,
                    "task_start": task_start,
                    "task_end": task_end,
                    "is_straggler": latency >= run.threshold,
                    "evaluated": run.evaluated,
                    "flagged": ~np.isnan(run.flag_time),
                    "flag_time": run.flag_time,
                    "resume_attempts": (run.resume_attempts if run.resume_attempts is not None
                                        else np.full(job.n_tasks, np.nan)),
                }
            )
        )
        log.info(
            "%s on job %s: %d checkpoints, %d flagged, %.2fs",
            method_class.name,
            job.job_id,
            run.n_checkpoints,
            int((~np.isnan(run.flag_time)).sum()),
            row["seconds"],
        )
    tasks = pd.concat(task_frames, ignore_index=True) if task_frames else empty_tasks_frame()
    jobs_frame = pd.DataFrame(job_rows, columns=JOB_RESULT_COLUMNS)
    return tasks, jobs_frame


TASK_RESULT_COLUMNS = [
    "dataset",
    "method",
    "job_id",
    "task",
    "latency",
    "task_start",
    "task_end",
    "is_straggler",
    "evaluated",
    "flagged",
    "flag_time",
    "resume_attempts",
]
JOB_RESULT_COLUMNS = [
    "dataset",
    "method",
    "family",
    "privileged",
    "job_id",
    "n_tasks",
    "status",
    "reason",
    "seconds",
    "n_checkpoints",
    "straggler_threshold",
    "job_start",
    "job_end",
    "prediction_start",
]


def empty_tasks_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "dataset": pd.Series(dtype=str),
            "method": pd.Series(dtype=str),
            "job_id": pd.Series(dtype=str),
            "task": pd.Series(dtype=np.int32),
            "latency": pd.Series(dtype=float),
            "task_start": pd.Series(dtype=float),
            "task_end": pd.Series(dtype=float),
            "is_straggler": pd.Series(dtype=bool),
            "evaluated": pd.Series(dtype=bool),
            "flagged": pd.Series(dtype=bool),
            "flag_time": pd.Series(dtype=float),
            "resume_attempts": pd.Series(dtype=float),
        }
    )
