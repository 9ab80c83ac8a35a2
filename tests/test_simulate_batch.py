"""The simulation's batch functions (one sort of the prediction rows, one frame built from
arrays) against the frame-per-job code they replace, kept here as the reference: equal frames
and equal Parquet bytes on varied prediction tables (one-task jobs, ties, jobs without flags,
failed jobs, several methods' rows interleaved, chosen resume attempts, no machines)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stragglers.io import write_parquet_atomic
from stragglers.simulate import jct, policies
from stragglers.simulate.jct import (
    ALGORITHM_LIMITED,
    ALGORITHM_UNLIMITED,
    ID_COLUMNS,
    RELAUNCH_READINGS,
    RESULT_COLUMNS,
    draw_pool,
    jct_reduction,
    mitigated_jct_limited,
    mitigated_jct_unlimited,
    relaunch_reading,
    replacement_durations,
    replacement_uniforms,
)
from stragglers.simulate.policies import (
    POLICIES,
    POLICY_COLUMNS,
    attempt_durations,
    reference_jct,
    simulate_policy,
)

# ----------------------------------------------------------------------------- the old code


def old_simulate_job(
    task_start, task_end, flag_time, replacement, *, grid_origin, machines,
    checkpoint_interval, job_id=None, relaunch_from="flag",
):  # fmt: skip
    machines = list(machines)
    jct_base, unlimited = mitigated_jct_unlimited(
        task_start, task_end, flag_time, replacement, job_id=job_id, relaunch_from=relaunch_from
    )
    _, limited = mitigated_jct_limited(
        task_start, task_end, flag_time, replacement, machines, grid_origin,
        checkpoint_interval, job_id=job_id, relaunch_from=relaunch_from,
    )  # fmt: skip
    n_settings, n_repeats = limited.shape
    machine_per_row = np.repeat(np.asarray(machines, dtype=np.int64), n_repeats)
    frame = pd.DataFrame(
        {
            "algorithm": np.repeat(
                [ALGORITHM_UNLIMITED, ALGORITHM_LIMITED], [n_repeats, n_settings * n_repeats]
            ),
            "machines": pd.arrays.IntegerArray(
                np.concatenate([np.zeros(n_repeats, np.int64), machine_per_row]),
                np.arange(n_repeats * (n_settings + 1)) < n_repeats,
            ),
            "repeat": np.concatenate(
                [np.arange(n_repeats), np.tile(np.arange(n_repeats), n_settings)]
            ),
            "jct_base": jct_base,
            "jct_mitigated": np.concatenate([unlimited, limited.ravel()]),
        }
    )
    frame["reduction"] = jct_reduction(jct_base, frame["jct_mitigated"].to_numpy())
    return frame


def old_simulate_jobs(
    tasks, ok_jobs, *, grid_origin, checkpoint_interval, machines, repeats, seed,
    relaunch="from_flag",
):  # fmt: skip
    relaunch_reading(relaunch)
    readings = [relaunch] + [r for r in RELAUNCH_READINGS if r != relaunch]
    frames = []
    for (dataset, method, job_id), job_tasks in tasks.groupby(ID_COLUMNS, sort=False):
        if job_id not in ok_jobs:
            continue
        job_tasks = job_tasks.sort_values("task")
        latency = job_tasks["latency"].to_numpy(float)
        uniforms = replacement_uniforms(str(job_id), len(latency), repeats, seed)
        for reading in readings:
            relaunch_from, pool = relaunch_reading(reading)
            frame = old_simulate_job(
                job_tasks["task_start"].to_numpy(float),
                job_tasks["task_end"].to_numpy(float),
                job_tasks["flag_time"].to_numpy(float),
                replacement_durations(
                    draw_pool(latency, job_tasks["is_straggler"].to_numpy(bool), pool),
                    uniforms,
                ),
                grid_origin=grid_origin,
                machines=machines,
                checkpoint_interval=checkpoint_interval,
                job_id=str(job_id),
                relaunch_from=relaunch_from,
            )
            frame.insert(0, "job_id", str(job_id))
            frame.insert(0, "method", method)
            frame.insert(0, "dataset", dataset)
            frame["reading"] = reading
            frame["primary"] = reading == relaunch
            frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=[*ID_COLUMNS, *RESULT_COLUMNS, "reading", "primary"])
    return pd.concat(frames, ignore_index=True)


def old_simulate_job_policies(
    task_start, task_end, flag_time, durations, *, straggler_threshold, grid_origin,
    machines=(), resume_attempts=2, checkpoint_interval, kill_delay=None, job_id=None,
):  # fmt: skip
    start = np.asarray(task_start, dtype=np.float64)
    end = np.asarray(task_end, dtype=np.float64)
    settings = [None, *machines]
    jct_base = float(end.max() - start.min())
    reference = reference_jct(start, end, straggler_threshold)
    base_machine = float((end - start).sum())
    n_repeats = np.asarray(durations).shape[1]
    frames = []
    for policy in POLICIES:
        jct_values, machine = simulate_policy(
            policy, start, end, flag_time, durations, machines=settings,
            grid_origin=grid_origin, checkpoint_interval=checkpoint_interval,
            resume_attempts=resume_attempts, kill_delay=kill_delay, job_id=job_id,
        )  # fmt: skip
        machine_values = np.repeat(np.asarray([0, *machines], dtype=np.int64), n_repeats)
        frames.append(
            pd.DataFrame(
                {
                    "policy": policy,
                    "machines": pd.arrays.IntegerArray(
                        machine_values, np.arange(machine_values.size) < n_repeats
                    ),
                    "repeat": np.tile(np.arange(n_repeats), len(settings)),
                    "jct_base": jct_base,
                    "jct_mitigated": jct_values.ravel(),
                    "reduction": (jct_base - jct_values.ravel()) / jct_base
                    if jct_base > 0
                    else 0.0,
                    "jct_reference": reference,
                    "machine_time_base": base_machine,
                    "machine_time": machine.ravel(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)[POLICY_COLUMNS]


def old_simulate_jobs_policies(
    tasks, thresholds, *, grid_origin, checkpoint_interval, machines, repeats,
    resume_attempts, kill_delay, seed,
):  # fmt: skip
    frames = []
    for (dataset, method, job_id), job_tasks in tasks.groupby(ID_COLUMNS, sort=False):
        if job_id not in thresholds.index:
            continue
        job_tasks = job_tasks.sort_values("task")
        start = job_tasks["task_start"].to_numpy(float)
        end = job_tasks["task_end"].to_numpy(float)
        chosen = (
            job_tasks["resume_attempts"].to_numpy(float)
            if "resume_attempts" in job_tasks
            else np.full(len(start), np.nan)
        )
        attempts = np.where(np.isnan(chosen), resume_attempts, chosen).astype(np.int64)
        frame = old_simulate_job_policies(
            start,
            end,
            job_tasks["flag_time"].to_numpy(float),
            attempt_durations(str(job_id), end - start, repeats, int(attempts.max()), seed),
            straggler_threshold=float(thresholds.loc[job_id]),
            grid_origin=grid_origin,
            machines=machines,
            resume_attempts=attempts,
            checkpoint_interval=checkpoint_interval,
            kill_delay=kill_delay,
            job_id=str(job_id),
        )
        frame.insert(0, "job_id", str(job_id))
        frame.insert(0, "method", method)
        frame.insert(0, "dataset", dataset)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=[*ID_COLUMNS, *POLICY_COLUMNS])
    return pd.concat(frames, ignore_index=True)


# ----------------------------------------------------------------------------- inputs

ORIGIN, INTERVAL = 600.0, 300.0


def job_rows(rng, dataset, method, job_id, n_tasks, kind):
    """One job's prediction rows; `kind` picks its flags: none, all, some, ties (equal starts,
    ends and flag times), one (a one-task job), zero (zero-length tasks)."""
    if kind == "ties":
        start = np.full(n_tasks, ORIGIN + 100.0)
        end = start + np.repeat([400.0, 1300.0], [n_tasks - n_tasks // 3, n_tasks // 3])
    elif kind == "zero":
        start = np.full(n_tasks, ORIGIN)
        end = start.copy()
    else:
        start = ORIGIN + rng.uniform(0, 900, n_tasks)
        end = start + rng.lognormal(6.5, 0.8, n_tasks)
    latency = end - start
    threshold = float(np.quantile(latency, 0.9))
    # flags on the grid, inside [start, end): the first checkpoint after start, if any
    first_k = np.floor((start - ORIGIN) / INTERVAL) + 1
    later_k = first_k + rng.integers(0, 3, n_tasks)
    flag = ORIGIN + later_k * INTERVAL
    flag = np.where(flag < end, flag, ORIGIN + first_k * INTERVAL)
    on = flag < end
    if kind == "none":
        on[:] = False
    elif kind in ("some", "one"):
        on &= rng.random(n_tasks) < 0.4
    flag = np.where(on, flag, np.nan)
    attempts = np.where(on & (rng.random(n_tasks) < 0.5), rng.integers(1, 4, n_tasks), np.nan)
    order = rng.permutation(n_tasks)  # the rows come in any order; the task number sorts them
    tasks = pd.DataFrame(
        {
            "dataset": dataset,
            "method": method,
            "job_id": job_id,
            "task": np.arange(n_tasks, dtype=np.int32)[order],
            "latency": latency[order],
            "task_start": start[order],
            "task_end": end[order],
            "is_straggler": (latency >= threshold)[order],
            "evaluated": True,
            "flagged": on[order],
            "flag_time": flag[order],
            "resume_attempts": attempts[order],
        }
    )
    return tasks, threshold


def prediction_table(seed, kinds, with_attempts=True):
    """Several methods' jobs, their rows interleaved in blocks; (tasks, thresholds of the ok
    jobs); the last job of each method failed (in no threshold)."""
    rng = np.random.default_rng(seed)
    parts, thresholds = [], {}
    for method in ("M1", "M2"):
        for n, kind in enumerate(kinds):
            n_tasks = 1 if kind == "one" else int(rng.integers(2, 40))
            job_id = f"{1000 + n}"
            frame, threshold = job_rows(rng, "d", method, job_id, n_tasks, kind)
            parts.append(frame)
            if n < len(kinds) - 1:
                thresholds[job_id] = threshold
    tasks = pd.concat(parts, ignore_index=True)
    blocks = np.array_split(np.arange(len(tasks)), 7)
    tasks = tasks.iloc[np.concatenate([blocks[i] for i in rng.permutation(7)])]
    tasks = tasks.reset_index(drop=True)
    if not with_attempts:
        tasks = tasks.drop(columns="resume_attempts")
    return tasks, pd.Series(thresholds, dtype=float)


KINDS = [
    ["some", "none", "all", "ties", "one", "zero", "some"],
    ["one", "some"],
    ["ties", "all", "none"],
    ["none", "none"],
]
SETTINGS = [
    dict(machines=[100, 200, 300, 400, 500, 600, 700, 800, 900], repeats=5),
    dict(machines=[0, 1, 3], repeats=2),
    dict(machines=[], repeats=1),
]


def parquet_bytes(frame, path):
    write_parquet_atomic(frame, str(path))
    return path.read_bytes()


# ----------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_simulate_jobs_equals_the_frame_per_job_code(tmp_path, seed, settings):
    tasks, thresholds = prediction_table(seed, KINDS[seed - 1])
    ok_jobs = set(thresholds.index)
    for relaunch in RELAUNCH_READINGS:
        arguments = dict(
            grid_origin=ORIGIN, checkpoint_interval=INTERVAL, seed=7, relaunch=relaunch,
            **settings,
        )  # fmt: skip
        new = jct.simulate_jobs(tasks, ok_jobs, **arguments)
        old = old_simulate_jobs(tasks, ok_jobs, **arguments)
        pd.testing.assert_frame_equal(new, old, check_exact=True)
        assert parquet_bytes(new, tmp_path / "new.parquet") == parquet_bytes(
            old, tmp_path / "old.parquet"
        )


@pytest.mark.parametrize("with_attempts", [True, False])
@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_simulate_jobs_policies_equals_the_frame_per_job_code(
    tmp_path, seed, settings, with_attempts
):
    tasks, thresholds = prediction_table(seed, KINDS[seed - 1], with_attempts)
    arguments = dict(
        grid_origin=ORIGIN, checkpoint_interval=INTERVAL, seed=7, resume_attempts=2,
        kill_delay=None, **settings,
    )  # fmt: skip
    new = policies.simulate_jobs_policies(tasks, thresholds, **arguments)
    old = old_simulate_jobs_policies(tasks, thresholds, **arguments)
    pd.testing.assert_frame_equal(new, old, check_exact=True)
    assert parquet_bytes(new, tmp_path / "new.parquet") == parquet_bytes(
        old, tmp_path / "old.parquet"
    )


def test_single_job_frames_equal_the_old_ones():
    tasks, thresholds = prediction_table(5, ["some"])
    tasks = tasks.sort_values("task")
    start, end = tasks["task_start"].to_numpy(), tasks["task_end"].to_numpy()
    flag = tasks["flag_time"].to_numpy()
    replacement = replacement_durations(end - start, replacement_uniforms("x", len(start), 3, 1))
    for machines in ([], [1, 5]):
        arguments = dict(
            grid_origin=ORIGIN, machines=machines, checkpoint_interval=INTERVAL, job_id="x"
        )
        pd.testing.assert_frame_equal(
            jct.simulate_job(start, end, flag, replacement, **arguments),
            old_simulate_job(start, end, flag, replacement, **arguments),
            check_exact=True,
        )
        durations = attempt_durations("x", end - start, 3, 2, 1)
        arguments = dict(
            straggler_threshold=float(np.quantile(end - start, 0.9)),
            grid_origin=ORIGIN,
            machines=machines,
            checkpoint_interval=INTERVAL,
            job_id="x",
        )
        pd.testing.assert_frame_equal(
            policies.simulate_job_policies(start, end, flag, durations, **arguments),
            old_simulate_job_policies(start, end, flag, durations, **arguments),
            check_exact=True,
        )


def test_no_job_to_simulate_gives_the_same_empty_frames():
    tasks, _ = prediction_table(6, ["some", "none"])
    arguments = dict(grid_origin=ORIGIN, checkpoint_interval=INTERVAL, machines=[1], repeats=2)
    pd.testing.assert_frame_equal(
        jct.simulate_jobs(tasks, set(), seed=1, **arguments),
        old_simulate_jobs(tasks, set(), seed=1, **arguments),
    )
    policy_arguments = dict(resume_attempts=2, kill_delay=None, seed=1, **arguments)
    empty = pd.Series([], dtype=float)
    pd.testing.assert_frame_equal(
        policies.simulate_jobs_policies(tasks, empty, **policy_arguments),
        old_simulate_jobs_policies(tasks, empty, **policy_arguments),
    )
    pd.testing.assert_frame_equal(
        jct.simulate_jobs(tasks.iloc[:0], {"1000"}, seed=1, **arguments),
        old_simulate_jobs(tasks.iloc[:0], {"1000"}, seed=1, **arguments),
    )


def test_jobs_in_order_follows_groupby_and_task_order():
    tasks, _ = prediction_table(7, ["some", "one", "ties", "all"])
    expected = [
        (key, group.sort_values("task").index.to_numpy())
        for key, group in tasks.groupby(ID_COLUMNS, sort=False)
    ]
    found = list(jct.jobs_in_order(tasks))
    assert [(d, m, j) for d, m, j, _ in found] == [key for key, _ in expected]
    for (_, _, _, rows), (_, index) in zip(found, expected, strict=True):
        np.testing.assert_array_equal(rows, index)
