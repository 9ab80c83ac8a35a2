"""Mitigation policies with deadlines and machine time (LASER / SRQuant paper, Algorithms 1-2):
besides NURD's kill-and-relaunch, a flagged task can get a speculative copy (Hadoop-S, LATE,
Dolly) or a speculative resume with r + 1 attempts continuing its remaining work, kept at
tau_kill = tau_est + `kill_delay`. Durations come from the common random numbers of
`stragglers.simulate.jct`; machines are simulated as Algorithm 3. Per job and repeat: the
mitigated JCT, the reference time and machine time. The policies' timing, the machine queue
and the metrics: docs/simulation.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from stragglers.simulate.jct import (
    CHECKPOINT_INTERVAL,
    ID_COLUMNS,
    _frame_of_jobs,
    _grid_index,
    _validate_job,
    job_completion_time,
    jobs_in_order,
    replacement_durations,
    replacement_uniforms,
)

POLICIES: tuple[str, ...] = ("relaunch", "copy", "resume")
DEFAULT_DEADLINE_FACTORS: tuple[float, ...] = (1.0, 1.1, 1.25)
POLICY_COLUMNS = [
    "policy",
    "machines",
    "repeat",
    "jct_base",
    "jct_mitigated",
    "reduction",
    "jct_reference",
    "machine_time_base",
    "machine_time",
]
_UNLIMITED = np.iinfo(np.int64).max // 4


def attempt_durations(
    job_id: str, latency: np.ndarray, n_repeats: int, n_attempts: int, seed: int
) -> np.ndarray:
    """Full-task durations of attempts, shape (n_attempts, n_repeats, n_tasks).

    Attempt 0 is the kill-and-relaunch draw of ``stragglers.simulate`` (same uniforms)."""
    latency = np.asarray(latency, dtype=np.float64)
    n = latency.size
    rows = [replacement_uniforms(job_id, n, n_repeats, seed)]
    rows += [
        replacement_uniforms(f"{job_id}#attempt{a}", n, n_repeats, seed)
        for a in range(1, n_attempts)
    ]
    return np.stack([replacement_durations(latency, u) for u in rows])


def reference_jct(task_start: np.ndarray, task_end: np.ndarray, threshold: float) -> float:
    """JCT if no task ran past tau: every latency cut to ``threshold``, same starts."""
    start = np.asarray(task_start, dtype=np.float64)
    end = np.minimum(np.asarray(task_end, dtype=np.float64), start + float(threshold))
    return job_completion_time(start, end)


def simulate_policy(
    policy: str,
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    durations: np.ndarray,
    *,
    machines: Sequence[int | None] = (None,),
    grid_origin: float = 0.0,
    checkpoint_interval: float = CHECKPOINT_INTERVAL,
    resume_attempts: np.ndarray | int = 2,
    kill_delay: float | None = None,
    job_id: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(jct_mitigated, machine_time), each of shape (len(machines), n_repeats).

    ``durations``: (n_attempts, n_repeats, n_tasks) full-task draws (``attempt_durations``);
    relaunch and copy use attempt 0. ``resume_attempts``: r + 1 per task (int or array),
    at most n_attempts. ``machines``: ints, or None for unlimited.
    """
    (result,) = simulate_policies(
        [policy],
        task_start,
        task_end,
        flag_time,
        durations,
        machines=machines,
        grid_origin=grid_origin,
        checkpoint_interval=checkpoint_interval,
        resume_attempts=resume_attempts,
        kill_delay=kill_delay,
        job_id=job_id,
    )
    return result


def simulate_policies(
    policies: Sequence[str],
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    durations: np.ndarray,
    *,
    machines: Sequence[int | None] = (None,),
    grid_origin: float = 0.0,
    checkpoint_interval: float = CHECKPOINT_INTERVAL,
    resume_attempts: np.ndarray | int = 2,
    kill_delay: float | None = None,
    job_id: str | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """`simulate_policy` for each of `policies`, in one batch: the same values, and the
    same error as `simulate_policy` called per policy in this order raises first.

    Every (policy, machine count, repeat) is a row; rows never interact, and a policy's rows
    stop changing at the checkpoint where its own loop would stop."""
    where = f"job {job_id!r}: " if job_id is not None else ""
    attempts = None
    for n, policy in enumerate(policies):
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; known: {list(POLICIES)}")
        if n == 0:  # the checks every policy makes, in simulate_policy's order
            durations = np.asarray(durations, dtype=np.float64)
            if durations.ndim != 3:
                raise ValueError(
                    f"{where}durations must have shape (attempts, repeats, tasks), "
                    f"got {durations.shape}"
                )
            start, end, flag, flagged, _ = _validate_job(
                task_start, task_end, flag_time, durations[0], job_id
            )
            n_attempts, n_repeats, _ = durations.shape
            attempts = np.broadcast_to(np.asarray(resume_attempts, dtype=np.int64), start.shape)
        if policy == "resume" and np.any(flagged & ((attempts < 1) | (attempts > n_attempts))):
            raise ValueError(
                f"{where}resume_attempts must lie in 1..{n_attempts} for flagged tasks"
            )
        if n == 0:
            if kill_delay is None:
                kill_delay = checkpoint_interval
            if not (kill_delay >= 0 and math.isfinite(kill_delay)):
                raise ValueError(
                    f"{where}kill_delay must be a finite number >= 0, got {kill_delay!r}"
                )
            settings = []
            for m in machines:
                if m is None:
                    settings.append(_UNLIMITED)
                elif isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
                    raise ValueError(f"{where}machines must be ints >= 0 or None, got {m!r}")
                else:
                    settings.append(int(m))
    if not policies:
        return []
    capacity_per_setting = np.asarray(settings, dtype=np.int64)
    n_settings = capacity_per_setting.size
    first_start = start.min()
    latency = end - start
    base_machine = float(latency.sum())
    if not flagged.any() or n_settings == 0:
        return [
            (
                np.full((n_settings, n_repeats), end.max() - first_start),
                np.full((n_settings, n_repeats), base_machine),
            )
            for _ in policies
        ]

    positions = np.flatnonzero(flagged)
    flag_k = _grid_index(flag[positions], grid_origin, checkpoint_interval, job_id)
    order = np.lexsort((positions, flag_k))
    positions, flag_k = positions[order], flag_k[order]
    f_start, f_end, f_latency = start[positions], end[positions], latency[positions]
    n_flagged = positions.size
    n_block = n_settings * n_repeats  # rows per policy: (setting, repeat)
    full_draw = np.tile(durations[0][:, positions], (n_settings, 1))  # (n_block, K) full draw
    fulls, needs = [], []
    for policy in policies:
        if policy == "resume":
            # fastest of the first r+1 attempts, per task
            prefix_min = np.minimum.accumulate(durations[:, :, positions], axis=0)  # (A, R, K)
            fastest = prefix_min[attempts[positions] - 1, :, np.arange(n_flagged)].T  # (R, K)
            fulls.append(np.tile(fastest, (n_settings, 1)))
            needs.append(np.broadcast_to(attempts[positions], (n_block, n_flagged)))
        else:
            fulls.append(full_draw)
            needs.append(np.ones((n_block, n_flagged), dtype=np.int64))
    n_policies = len(policies)
    full = np.concatenate(fulls)  # rows: (policy, setting, repeat)
    need = np.concatenate(needs)
    losers = need - 1
    any_losers = bool(losers.any())  # else their running copies add nothing
    capacity = np.tile(np.repeat(capacity_per_setting, n_repeats), n_policies)
    row_policy = np.repeat(np.arange(n_policies), n_block)
    n_rows = capacity.size
    if "resume" in policies:
        share_divisor = np.where(f_latency > 0, f_latency, 1.0)

    u_start = np.sort(start[~flagged])
    u_end = np.sort(end[~flagged])
    original_end = np.broadcast_to(f_end, (n_rows, n_flagged)).copy()
    task_end_new = np.broadcast_to(f_end, (n_rows, n_flagged)).copy()
    extra_machine = np.zeros((n_rows, n_flagged))  # machine-seconds of copies/attempts
    winner_end = np.full((n_rows, n_flagged), -np.inf)  # copy / winning attempt end
    loser_end = np.full((n_rows, n_flagged), -np.inf)  # resume: losing attempts' end
    served_any = np.zeros((n_rows, n_flagged), dtype=bool)
    last_k = int(flag_k.max())
    # A row whose policy's loop has stopped, or which can have no task waiting any more,
    # never changes again: its sums are taken then and it leaves the batch (`live`: the
    # batch's rows' numbers; `stopped`: the policies whose loop has stopped).
    live = np.arange(n_rows)
    stopped = np.zeros(n_policies, dtype=bool)
    original_machine = np.empty(n_rows)
    extra_sum = np.empty(n_rows)
    final_end = np.empty(n_rows)

    def retire(rows: np.ndarray) -> None:
        nonlocal live, capacity, row_policy, full, need, losers
        nonlocal original_end, task_end_new, extra_machine, winner_end, loser_end, served_any
        ids = live[rows]
        original_machine[ids] = (original_end[rows] - f_start).sum(axis=1)
        extra_sum[ids] = extra_machine[rows].sum(axis=1)
        final_end[ids] = task_end_new[rows].max(axis=1)
        keep = ~rows
        live, capacity, row_policy = live[keep], capacity[keep], row_policy[keep]
        full, need, losers = full[keep], need[keep], losers[keep]
        original_end, task_end_new = original_end[keep], task_end_new[keep]
        extra_machine, winner_end = extra_machine[keep], winner_end[keep]
        loser_end, served_any = loser_end[keep], served_any[keep]

    k = int(flag_k[0])
    while True:
        c = grid_origin + k * checkpoint_interval
        running = (
            int(np.searchsorted(u_start, c, "right") - np.searchsorted(u_end, c, "right"))
            + ((f_start <= c) & (c < original_end)).sum(axis=1)
            + (winner_end > c).sum(axis=1)
        )
        if any_losers:
            running += np.where(loser_end > c, losers, 0).sum(axis=1)
        free = np.maximum(capacity - running, 0)
        waiting = (flag_k <= k) & (f_end > c) & ~served_any
        served = waiting & (np.cumsum(np.where(waiting, need, 0), axis=1) <= free[:, None])
        served_row = served.any(axis=1)
        # a policy's rows are a block of the batch (in policy order, also after rows leave)
        bounds = np.searchsorted(row_policy, np.arange(n_policies + 1))
        for p, policy in enumerate(policies):
            lo, hi = bounds[p], bounds[p + 1]
            if not served_row[lo:hi].any():
                continue
            # the old per-policy formulas, on the served (row, task) cells only
            cells = served[lo:hi]
            draw = full[lo:hi][cells]
            if policy == "relaunch":
                new_end = c + draw
                original_end[lo:hi][cells] = c
                extra = draw
            elif policy == "copy":
                new_end = np.minimum(np.broadcast_to(f_end, cells.shape)[cells], c + draw)
                original_end[lo:hi][cells] = new_end
                extra = new_end - c
            else:  # resume: remaining share of the work, fastest attempt kept
                share = (f_end - c) / share_divisor
                run = np.broadcast_to(share, cells.shape)[cells] * draw
                new_end = c + run
                original_end[lo:hi][cells] = c
                lose = np.minimum(run, kill_delay)
                extra = run + losers[lo:hi][cells] * lose
                loser_end[lo:hi][cells] = c + lose
            task_end_new[lo:hi][cells] = new_end
            winner_end[lo:hi][cells] = new_end
            extra_machine[lo:hi][cells] = extra
        served_any |= served
        if k >= last_k:
            still_waiting = ((flag_k <= k) & (f_end > c + checkpoint_interval) & ~served_any).any(
                axis=1
            )
            for p in np.flatnonzero(~stopped):
                if not still_waiting[bounds[p] : bounds[p + 1]].any():
                    stopped[p] = True
            # rows of a stopped policy, and rows where no task can wait at a later checkpoint
            c_next = grid_origin + (k + 1) * checkpoint_interval
            can_wait = ((f_end > c_next) & ~served_any).any(axis=1)
            done = stopped[row_policy] | ~can_wait
            if done.any():
                retire(done)
            if stopped.all():
                break
        k += 1

    machine = base_machine - f_latency.sum() + original_machine + extra_sum
    if u_end.size:
        final_end = np.maximum(final_end, u_end[-1])
    jct = (final_end - first_start).reshape(n_policies, n_settings, n_repeats)
    machine = machine.reshape(n_policies, n_settings, n_repeats)
    return [(jct[p], machine[p]) for p in range(n_policies)]


def job_policies(
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    durations: np.ndarray,
    *,
    straggler_threshold: float,
    grid_origin: float,
    machines: Sequence[int] = (),
    policies: Sequence[str] = POLICIES,
    resume_attempts: np.ndarray | int = 2,
    checkpoint_interval: float = CHECKPOINT_INTERVAL,
    kill_delay: float | None = None,
    job_id: str | None = None,
) -> tuple[dict[str, float], list[dict[str, np.ndarray]]]:
    """The values of `simulate_job_policies`'s rows: (the job's jct_base, jct_reference and
    machine_time_base; per policy its jct_mitigated, reduction and machine_time, unlimited's
    repeats first, then each m's)."""
    start = np.asarray(task_start, dtype=np.float64)
    end = np.asarray(task_end, dtype=np.float64)
    settings: list[int | None] = [None, *machines]
    jct_base = job_completion_time(start, end)
    job = {
        "jct_base": jct_base,
        "jct_reference": reference_jct(start, end, straggler_threshold),
        "machine_time_base": float((end - start).sum()),
    }
    per_policy = []
    simulated = simulate_policies(
        policies,
        start,
        end,
        flag_time,
        durations,
        machines=settings,
        grid_origin=grid_origin,
        checkpoint_interval=checkpoint_interval,
        resume_attempts=resume_attempts,
        kill_delay=kill_delay,
        job_id=job_id,
    )
    for jct, machine in simulated:
        per_policy.append(
            {
                "jct_mitigated": jct.ravel(),
                "reduction": (jct_base - jct.ravel()) / jct_base
                if jct_base > 0
                else np.zeros(jct.size),
                "machine_time": machine.ravel(),
            }
        )
    return job, per_policy


def _policy_row_keys(machines: Sequence[int], n_repeats: int) -> dict[str, np.ndarray]:
    """One policy's machines (values, NA mask: unlimited) and repeat per row, in
    job_policies's order."""
    machine_values = np.repeat(np.asarray([0, *machines], dtype=np.int64), n_repeats)
    return {
        "machines": machine_values,
        "machines_na": np.arange(machine_values.size) < n_repeats,
        "repeat": np.tile(np.arange(n_repeats), len(machines) + 1),
    }


def simulate_job_policies(
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    durations: np.ndarray,
    **settings: Any,
) -> pd.DataFrame:
    """Every policy, unlimited and each m, as rows with columns POLICY_COLUMNS (`settings`:
    `job_policies`'s keyword arguments; straggler_threshold and grid_origin are required).

    ``machines`` <NA> = unlimited."""
    machines = list(settings.pop("machines", ()))
    policies = list(settings.get("policies", POLICIES))
    job, per_policy = job_policies(
        task_start, task_end, flag_time, durations, machines=machines, **settings
    )
    keys = _policy_row_keys(machines, np.asarray(durations).shape[1])
    frames = [
        pd.DataFrame(
            {
                "policy": policy,
                "machines": pd.arrays.IntegerArray(keys["machines"], keys["machines_na"]),
                "repeat": keys["repeat"],
                "jct_base": job["jct_base"],
                "jct_mitigated": values["jct_mitigated"],
                "reduction": values["reduction"],
                "jct_reference": job["jct_reference"],
                "machine_time_base": job["machine_time_base"],
                "machine_time": values["machine_time"],
            }
        )
        for policy, values in zip(policies, per_policy, strict=True)
    ]
    return pd.concat(frames, ignore_index=True)[POLICY_COLUMNS]


def pocd_summary(frame: pd.DataFrame, deadline_factors: Sequence[float]) -> pd.DataFrame:
    """Per (method, policy, machines): mean JCT reduction, relative machine time and PoCD.

    PoCD at factor d = share of (job, repeat) pairs with jct_mitigated <= d * jct_reference;
    ``Hadoop-NS`` (no mitigation) rows are added from jct_base per method-independent job.
    Machine time relative = mean over jobs of machine_time / machine_time_base.
    """
    keys = ["method", "policy", "machines"]
    frame = frame.copy()
    frame["machines"] = frame["machines"].astype("Int64").astype(str).replace("<NA>", "unlimited")
    base = frame.drop_duplicates(["job_id", "repeat"]).assign(
        method="Hadoop-NS",
        policy="none",
        jct_mitigated=lambda f: f["jct_base"],
        machine_time=lambda f: f["machine_time_base"],
        reduction=0.0,
        machines="unlimited",
    )
    frame = pd.concat([base, frame], ignore_index=True)
    frame["machine_time_rel"] = frame["machine_time"] / frame["machine_time_base"]
    for d in deadline_factors:
        frame[f"pocd_{d:g}"] = (
            frame["jct_mitigated"] <= d * frame["jct_reference"] * (1 + 1e-12)
        ).astype(float)
    per_job = frame.groupby([*keys, "job_id"], sort=False).mean(numeric_only=True)
    table = per_job.groupby(level=keys, sort=False).agg(
        jobs=("reduction", "size"),
        reduction=("reduction", "mean"),
        machine_time_rel=("machine_time_rel", "mean"),
        **{f"pocd_{d:g}": (f"pocd_{d:g}", "mean") for d in deadline_factors},
    )
    return table.reset_index()


def simulate_jobs_policies(
    tasks: pd.DataFrame,
    thresholds: pd.Series,
    *,
    grid_origin: float,
    checkpoint_interval: float,
    machines: Sequence[int],
    repeats: int,
    resume_attempts: int,
    kill_delay: float | None,
    seed: int,
) -> pd.DataFrame:
    """`simulate_job_policies` for every job of the prediction rows `tasks` that `thresholds`
    (job id -> straggler threshold, the successful jobs) holds; a task's r + 1 attempts are
    its method's choice (column resume_attempts, SRQuant) where it made one, else
    `resume_attempts`. The rows are those of `simulate_job_policies`'s frames concatenated,
    the frame built once, from arrays (as `stragglers.simulate.jct.simulate_jobs`)."""
    machines = list(machines)
    start_all = tasks["task_start"].to_numpy(float)
    end_all = tasks["task_end"].to_numpy(float)
    flag_all = tasks["flag_time"].to_numpy(float)
    chosen_all = (
        tasks["resume_attempts"].to_numpy(float)
        if "resume_attempts" in tasks
        else np.full(len(tasks), np.nan)
    )
    # a label lookup in a Series costs more than a job's simulation; a repeated id keeps
    # `.loc`'s answer (a Series, which float() refuses, as before)
    threshold_of = thresholds.to_dict() if thresholds.index.is_unique else thresholds
    ids = []
    columns = {c: [] for c in POLICY_COLUMNS if c not in ("machines", "repeat")}
    for dataset, method, job_id, rows in jobs_in_order(tasks):
        if job_id not in thresholds.index:
            continue
        start, end, chosen = start_all[rows], end_all[rows], chosen_all[rows]
        attempts = np.where(np.isnan(chosen), resume_attempts, chosen).astype(np.int64)
        job, per_policy = job_policies(
            start,
            end,
            flag_all[rows],
            attempt_durations(str(job_id), end - start, repeats, int(attempts.max()), seed),
            straggler_threshold=float(threshold_of[job_id]),
            grid_origin=grid_origin,
            machines=machines,
            resume_attempts=attempts,
            checkpoint_interval=checkpoint_interval,
            kill_delay=kill_delay,
            job_id=str(job_id),
        )
        for policy, values in zip(POLICIES, per_policy, strict=True):
            ids.append((dataset, method, str(job_id)))
            columns["policy"].append(np.array(policy, dtype=object))
            for name, value in {**job, **values}.items():
                columns[name].append(value)
    if not ids:
        return pd.DataFrame(columns=[*ID_COLUMNS, *POLICY_COLUMNS])
    frame = _frame_of_jobs(ids, _policy_row_keys(machines, repeats), columns)
    return frame[[*ID_COLUMNS, *POLICY_COLUMNS]]
