"""The online replay on the aligned timeline (`replay.protocol: paper`; docs/protocols.md).

Composes the rules of stragglers/replay/aligned.py with the protocol's other switches (pruning,
scaling, features, initial finished set, threshold) and drives a method through the
checkpoints k = 2 .. K - 2, refitting whatever the method refits at every checkpoint.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stragglers.formats.features import fill_missing, prediction_start_count
from stragglers.formats.jobs import Job
from stragglers.methods.base import Checkpoint, JobInfo, Method
from stragglers.replay import aligned
from stragglers.replay.core import JobRun


def replay_aligned_job(job: Job, method: Method, settings, last_columns: np.ndarray, seed: int):
    rules = settings.rules
    interval = settings.aligned_step
    if rules.regressor == "sklearn_gbr":
        # the script's regressor with the script's column order (it breaks near-tied splits
        # by column position)
        order = aligned.script_column_order(job.feature_names)
        job = dataclasses.replace(
            job,
            window_features=job.window_features[:, order],
            feature_names=[job.feature_names[i] for i in order],
        )
        last_columns = np.asarray(last_columns, dtype=bool)[order]
    view = aligned.build_view(job, last_columns, rules.features, interval)
    latency = view.latency
    n = job.n_tasks
    tasks = aligned.scored_tasks(
        latency, view.n_windows, rules, settings.straggler_quantile, settings.start_fraction
    )
    threshold, stragglers, excluded = tasks.threshold, tasks.stragglers, tasks.excluded
    initial, join_from, in_play = tasks.initial, tasks.join_from, tasks.in_play
    final_features = view.final()
    scale = aligned.final_scale(final_features, latency) if rules.scaling == "final" else None

    feature_names = tuple(job.feature_names)
    model_threshold, model_latency = threshold, latency
    if scale is not None:
        feature_names = tuple(np.asarray(job.feature_names)[scale.keep])
        model_threshold = float(scale.latency(threshold))
        model_latency = scale.latency(latency)
    method.start_job(
        JobInfo(
            job_id=job.job_id,
            n_tasks=n,
            feature_names=feature_names,
            straggler_threshold=model_threshold,
            seed=seed,
            true_latency=np.array(model_latency, dtype=float) if method.privileged else None,
            checkpoint_interval=interval,
            grid_origin=float(settings.grid_origin),
            kill_delay=settings.resume_kill_delay,
            rules=rules,
        )
    )
    not_scored = np.zeros(n, dtype=bool)
    trained_on = method.excluded_from_evaluation()
    if trained_on is not None and len(trained_on):
        not_scored[np.asarray(trained_on, dtype=int)] = True

    flagged = np.zeros(n, dtype=bool)
    flag_time = np.full(n, np.nan)
    needed = prediction_start_count(int((~excluded).sum()), settings.start_fraction)
    started = False
    n_checkpoints = 0
    prediction_start = np.nan
    row_order: list[int] = []  # the finished rows in the script's order
    for k in aligned.checkpoint_range(view.n_windows, stragglers):
        finished = np.flatnonzero(
            aligned.finished_at(k, view.n_windows, initial, in_play, join_from)
        )
        if rules.initial_finished == "shortest" and len(finished):
            # the script's row order (its GBR's near-tied splits depend on it)
            aligned.script_row_order(
                row_order, finished, stragglers, latency, threshold, settings.start_fraction
            )
            finished = np.asarray(row_order, dtype=np.int64)
        if not started and rules.initial_finished == "first_to_finish" and len(finished) < needed:
            continue
        if len(finished) == 0:
            continue
        running = np.flatnonzero(in_play & (view.n_windows > k))  # flagged tasks stay
        if len(running) == 0:
            continue
        rows = view.rows(running, k)
        finished_features = final_features[finished]
        running_features = view.cumulative[rows]
        finished_latency = latency[finished]
        running_elapsed = view.elapsed[rows]
        if scale is not None:
            finished_features = scale.features(finished_features)
            running_features = scale.features(running_features)
            finished_latency = scale.latency(finished_latency)
            running_elapsed = scale.latency(running_elapsed)
        finished_features, running_features = fill_missing(finished_features, running_features)
        checkpoint = Checkpoint(
            time=aligned.flag_time(k, interval),
            index=int(k),
            first_prediction=not started,
            finished_tasks=finished,
            finished_features=finished_features,
            finished_latency=finished_latency,
            running_tasks=running,
            running_features=running_features,
            running_elapsed=running_elapsed,
            prescaled=scale is not None,
            running_order=(
                # the script's test list: stragglers first (SOD's batch scores depend on it)
                np.argsort(~stragglers[running], kind="stable")
                if rules.outlier_batch == "running_only"
                else None
            ),
        )
        if not started:
            prediction_start = checkpoint.time
        started = True
        decision = np.asarray(method.predict(checkpoint))
        if decision.shape != running.shape:
            raise ValueError(
                f"method {method.name} returned {decision.shape} decisions for "
                f"{running.shape[0]} running tasks at k={k}"
            )
        if decision.dtype != bool:
            raise TypeError(f"method {method.name} returned {decision.dtype}, expected bool")
        newly = running[decision & ~flagged[running]]
        flagged[newly] = True
        flag_time[newly] = checkpoint.time
        n_checkpoints += 1
    evaluated = in_play & ~not_scored
    if not len(aligned.checkpoint_range(view.n_windows, stragglers)):
        # K <= 3: the script's loop runs fewer than two checkpoints and its scoring, which
        # reads the second-to-last one, yields no result for the job. Nothing is scored, so
        # the job is counted as unscorable and left out of the means, as the paper's tables
        # could only average the jobs the script scored (rule 8, docs/protocols.md).
        evaluated = np.zeros(n, dtype=bool)
    return JobRun(
        flag_time=flag_time,
        evaluated=evaluated,
        threshold=threshold,
        n_checkpoints=n_checkpoints,
        prediction_start=prediction_start,
        latency=latency,
        task_start=np.zeros(n),
        task_end=latency.copy(),
    )
