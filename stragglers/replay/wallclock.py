"""The online replay of a job on the trace's clock (the paper's Algorithm 1 protocol):
checkpoints on the window grid; at each, a method sees the finished tasks whole and the
running ones through the windows available by then, and nothing after it reaches the method.
The protocol's rules (stragglers/formats/protocols.py) pick how features, scaling, the
threshold and the scored set are built; `protocol: reference` reproduces the reference code's
three uses of the future so their effect can be measured (docs/definitions.md, "The online
replay"; docs/deviations.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from stragglers.formats.features import FeatureAccumulator, fill_missing, prediction_start_count
from stragglers.formats.jobs import Job
from stragglers.methods.base import Checkpoint, JobInfo, Method
from stragglers.replay.aligned import FinalScale, final_scale
from stragglers.replay.core import (
    JobRun,
    ReplaySettings,
    checkpoint_times,
    reference_dropped_tasks,
    straggler_threshold,
)


def explicit_times(
    task_start: np.ndarray, task_end: np.ndarray, times: np.ndarray
) -> tuple[np.ndarray, int]:
    """The job's share of an explicit list of checkpoint times (a live run's poll times), as
    the grid's: the times after the first task starts, up to the first at or after the last
    end; and the position of the first of them in the list (the checkpoints' `index`, so one
    time has one index in every job)."""
    times = np.asarray(times, dtype=float)
    if len(times) > 1 and np.any(np.diff(times) <= 0):
        raise ValueError("explicit checkpoint times must be strictly increasing")
    first = int(np.searchsorted(times, float(np.min(task_start)), side="right"))
    last = int(np.searchsorted(times, float(np.max(task_end)), side="left"))
    return times[first : last + 1], first


def iterate_checkpoints(
    job: Job,
    settings: ReplaySettings,
    last_columns: np.ndarray,
    flagged: np.ndarray,
    excluded: np.ndarray,
    scale: FinalScale | None = None,
    machine_state: bool = False,
    times: np.ndarray | None = None,
) -> Iterator[Checkpoint]:
    """Yield the checkpoints at which prediction runs. `flagged` is read live (the caller
    updates it between yields), so flagged tasks drop out of later checkpoints. With `scale`
    (rule `scaling: final`) features and latencies are min-max scaled by all tasks' final
    values. `times`: explicit checkpoint times instead of the grid (explicit_times)."""
    accumulator = FeatureAccumulator(
        job,
        last_columns,
        divide_by_final_latency=settings.rules.features == "divided_by_final",
    )
    machines = None
    if machine_state and job.window_machine_state is not None:
        n_columns = job.window_machine_state.shape[1]
        machines = FeatureAccumulator(
            job, np.ones(n_columns, dtype=bool), window_values=job.window_machine_state
        )
    if times is None:
        times = checkpoint_times(job.task_start, job.task_end, settings)
        k0 = (
            round((times[0] - settings.grid_origin) / settings.checkpoint_interval)
            if len(times)
            else 0
        )
    else:
        times, k0 = explicit_times(job.task_start, job.task_end, times)
    needed = prediction_start_count(int((~excluded).sum()), settings.start_fraction)
    started = False
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


def replay_wallclock_job(
    job: Job,
    method: Method,
    settings: ReplaySettings,
    last_columns: np.ndarray,
    seed: int,
    history: Any = None,
    times: np.ndarray | None = None,
    method_threshold: float | None = None,
) -> JobRun:
    """Run one method over one job's checkpoints on the trace's clock; exceptions propagate to
    the caller. `history` (a stragglers.replay.history.JobHistory) reaches cross-job methods
    only. `times`: explicit checkpoint times instead of the grid; `method_threshold`: the
    threshold the method is given instead of the job's own (a live run's, which could not
    know the final latencies; the run is still scored against the job's own)."""
    rules = settings.rules
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
    model_threshold = threshold if method_threshold is None else float(method_threshold)
    model_latency = job.latency
    if scale is not None:
        feature_names = tuple(np.asarray(job.feature_names)[scale.keep])
        model_threshold = float(scale.latency(model_threshold))
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
        checkpoint_interval=float(settings.checkpoint_interval),
        grid_origin=float(settings.grid_origin),
        kill_delay=settings.resume_kill_delay,
        rules=rules,
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
        job,
        settings,
        last_columns,
        flagged,
        excluded,
        scale,
        machine_state=method.uses_machine_state,
        times=times,
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
