"""The simulation's batched loops against the loops they replace, kept here as the reference:
Algorithm 3 for several readings of the relaunch in one batch (`jct.readings_jcts`, rows that
leave the batch once they cannot change) and every mitigation policy in one batch
(`policies.simulate_policies`), each equal bit for bit to the old per-reading and per-policy
loops on random jobs: machines that bind or not, several flag checkpoints, ties, zero-length
tasks, no flags, chosen resume attempts, grids whose checkpoints round."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from stragglers.simulate import jct, policies
from stragglers.simulate.jct import (
    _CEIL_SLACK,
    _grid_index,
    _validate_job,
    _validate_machines,
    _validate_relaunch_from,
    _where,
)
from stragglers.simulate.policies import _UNLIMITED, POLICIES

# ----------------------------------------------------------------------------- the old code


def old_mitigated_jct_unlimited(
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    replacement: np.ndarray,
    *,
    job_id: str | None = None,
    relaunch_from: str = "flag",
) -> tuple[float, np.ndarray]:
    """Algorithm 2: (jct_base, jct_mitigated of shape (n_repeats,)). `relaunch_from`: "flag"
    (a copy ends at flag + draw) or "start" (at task start + draw: the drawn latency replaces
    the task's)."""
    start, end, flag, flagged, repl = _validate_job(
        task_start, task_end, flag_time, replacement, job_id
    )
    _validate_relaunch_from(relaunch_from, job_id)
    first_start = start.min()
    jct_base = float(end.max() - first_start)
    # Flagged tasks end at flag (or start) + replacement; the killed copy's end no longer counts.
    origin = np.where(flagged, flag, 0.0) if relaunch_from == "flag" else start
    new_end = np.where(flagged, origin + repl, end)  # (n_repeats, n_tasks)
    return jct_base, new_end.max(axis=1) - first_start


def old_mitigated_jct_limited(
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    replacement: np.ndarray,
    machines: Sequence[int],
    grid_origin: float,
    checkpoint_interval: float = 300.0,
    *,
    job_id: str | None = None,
    relaunch_from: str = "flag",
) -> tuple[float, np.ndarray]:
    """Algorithm 3: (jct_base, jct_mitigated of shape (len(machines), n_repeats)).

    All (machine count, repeat) pairs are simulated together as rows of one batch; the loop
    runs over the checkpoints where something can change in some row: a flag time, or, while
    a row has tasks waiting for a machine, the first checkpoint after some copy ends.
    `relaunch_from` "start": a copy launched at checkpoint c ends at task start + draw (it
    holds its machine until then; one that would have ended by c frees it at once).
    """
    start, end, flag, flagged, repl = _validate_job(
        task_start, task_end, flag_time, replacement, job_id
    )
    _validate_relaunch_from(relaunch_from, job_id)
    capacity_per_setting = _validate_machines(machines, job_id)
    if not (
        isinstance(checkpoint_interval, (int, float, np.number))
        and checkpoint_interval > 0
        and math.isfinite(checkpoint_interval)
    ):
        raise ValueError(
            f"{_where(job_id)}checkpoint_interval must be a finite number > 0, "
            f"got {checkpoint_interval!r}"
        )
    if not (isinstance(grid_origin, (int, float, np.number)) and math.isfinite(grid_origin)):
        raise ValueError(
            f"{_where(job_id)}grid_origin must be a finite number, got {grid_origin!r}"
        )
    grid_origin = float(grid_origin)
    checkpoint_interval = float(checkpoint_interval)

    n_repeats = repl.shape[0]
    n_settings = capacity_per_setting.size
    first_start = start.min()
    jct_base = float(end.max() - first_start)
    if n_settings == 0:
        return jct_base, np.empty((0, n_repeats))
    if not flagged.any():
        return jct_base, np.full((n_settings, n_repeats), jct_base)

    # Flagged tasks as columns, in service order: flag checkpoint, then task position.
    positions = np.flatnonzero(flagged)
    flag_k = _grid_index(flag[positions], grid_origin, checkpoint_interval, job_id)
    order = np.lexsort((positions, flag_k))
    positions, flag_k = positions[order], flag_k[order]
    f_start, f_end = start[positions], end[positions]
    n_flagged = positions.size

    # Rows: (machine count, repeat) pairs, machine-count major.
    capacity = np.repeat(capacity_per_setting, n_repeats)  # (B,)
    f_repl = np.tile(repl[:, positions], (n_settings, 1))  # (B, K)
    n_rows = capacity.size

    # Unflagged tasks run exactly as in the trace in every row: count them with sorted times.
    u_start = np.sort(start[~flagged])
    u_end = np.sort(end[~flagged])

    original_end = np.broadcast_to(f_end, (n_rows, n_flagged)).copy()  # becomes c when killed
    copy_end = np.full((n_rows, n_flagged), -np.inf)  # relaunched copy's end
    relaunched = np.zeros((n_rows, n_flagged), dtype=bool)
    flag_checkpoints = np.unique(flag_k)

    k = int(flag_checkpoints[0])
    while True:
        c = grid_origin + k * checkpoint_interval
        running = (
            int(np.searchsorted(u_start, c, "right") - np.searchsorted(u_end, c, "right"))
            + ((f_start <= c) & (c < original_end)).sum(axis=1)
            + (copy_end > c).sum(axis=1)
        )
        free = np.maximum(capacity - running, 0)
        waiting = (flag_k <= k) & (f_end > c) & ~relaunched
        served = waiting & (np.cumsum(waiting, axis=1) <= free[:, None])
        if served.any():
            original_end[served] = c
            if relaunch_from == "flag":
                copy_end[served] = c + f_repl[served]
            else:
                copy_end[served] = (f_start[None, :] + f_repl)[served]
            relaunched |= served

        # Next checkpoint where some row can change.
        candidates = []
        later = np.searchsorted(flag_checkpoints, k, "right")
        if later < flag_checkpoints.size:
            candidates.append(int(flag_checkpoints[later]))
        rows_waiting = (waiting & ~served).any(axis=1)
        if (rows_waiting & served.any(axis=1)).any():
            # Serving gives back the killed originals' machines from the next checkpoint.
            candidates.append(k + 1)
        elif rows_waiting.any():
            # A waiting row needs a machine: only a copy ending (its own included) frees one.
            next_end = math.inf
            i = np.searchsorted(u_end, c, "right")
            if i < u_end.size:
                next_end = u_end[i]
            ends = np.concatenate(
                [original_end[rows_waiting].ravel(), copy_end[rows_waiting].ravel()]
            )
            ends = ends[ends > c]
            if ends.size:
                next_end = min(next_end, float(ends.min()))
            # A waiting task's own original is still running, so next_end is finite.
            k_end = math.ceil((next_end - grid_origin) / checkpoint_interval - _CEIL_SLACK)
            candidates.append(max(k + 1, k_end))
        if not candidates:
            break
        k = min(candidates)

    final_end = np.where(relaunched, copy_end, f_end).max(axis=1)  # (B,)
    if u_end.size:
        final_end = np.maximum(final_end, u_end[-1])
    return jct_base, (final_end - first_start).reshape(n_settings, n_repeats)


def old_simulate_policy(
    policy: str,
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    durations: np.ndarray,
    *,
    machines: Sequence[int | None] = (None,),
    grid_origin: float = 0.0,
    checkpoint_interval: float = 300.0,
    resume_attempts: np.ndarray | int = 2,
    kill_delay: float | None = None,
    job_id: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(jct_mitigated, machine_time), each of shape (len(machines), n_repeats).

    ``durations``: (n_attempts, n_repeats, n_tasks) full-task draws (``attempt_durations``);
    relaunch and copy use attempt 0. ``resume_attempts``: r + 1 per task (int or array),
    at most n_attempts. ``machines``: ints, or None for unlimited.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {list(POLICIES)}")
    where = f"job {job_id!r}: " if job_id is not None else ""
    durations = np.asarray(durations, dtype=np.float64)
    if durations.ndim != 3:
        raise ValueError(
            f"{where}durations must have shape (attempts, repeats, tasks), got {durations.shape}"
        )
    start, end, flag, flagged, _ = _validate_job(
        task_start, task_end, flag_time, durations[0], job_id
    )
    n_attempts, n_repeats, _ = durations.shape
    attempts = np.broadcast_to(np.asarray(resume_attempts, dtype=np.int64), start.shape)
    if policy == "resume" and np.any(flagged & ((attempts < 1) | (attempts > n_attempts))):
        raise ValueError(f"{where}resume_attempts must lie in 1..{n_attempts} for flagged tasks")
    if kill_delay is None:
        kill_delay = checkpoint_interval
    if not (kill_delay >= 0 and math.isfinite(kill_delay)):
        raise ValueError(f"{where}kill_delay must be a finite number >= 0, got {kill_delay!r}")
    settings = []
    for m in machines:
        if m is None:
            settings.append(_UNLIMITED)
        elif isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
            raise ValueError(f"{where}machines must be ints >= 0 or None, got {m!r}")
        else:
            settings.append(int(m))
    capacity_per_setting = np.asarray(settings, dtype=np.int64)
    n_settings = capacity_per_setting.size
    first_start = start.min()
    latency = end - start
    base_machine = float(latency.sum())
    if not flagged.any() or n_settings == 0:
        jct = np.full((n_settings, n_repeats), end.max() - first_start)
        return jct, np.full((n_settings, n_repeats), base_machine)

    positions = np.flatnonzero(flagged)
    flag_k = _grid_index(flag[positions], grid_origin, checkpoint_interval, job_id)
    order = np.lexsort((positions, flag_k))
    positions, flag_k = positions[order], flag_k[order]
    f_start, f_end, f_latency = start[positions], end[positions], latency[positions]
    n_flagged = positions.size
    capacity = np.repeat(capacity_per_setting, n_repeats)  # rows: (setting, repeat)
    n_rows = capacity.size
    full = np.tile(durations[0][:, positions], (n_settings, 1))  # (B, K) full draw
    if policy == "resume":
        # fastest of the first r+1 attempts, per task
        prefix_min = np.minimum.accumulate(durations[:, :, positions], axis=0)  # (A, R, K)
        fastest = prefix_min[attempts[positions] - 1, :, np.arange(n_flagged)].T  # (R, K)
        full = np.tile(fastest, (n_settings, 1))
        need = np.broadcast_to(attempts[positions], (n_rows, n_flagged))
    else:
        need = np.ones((n_rows, n_flagged), dtype=np.int64)
    losers = need - 1

    u_start = np.sort(start[~flagged])
    u_end = np.sort(end[~flagged])
    original_end = np.broadcast_to(f_end, (n_rows, n_flagged)).copy()
    task_end_new = np.broadcast_to(f_end, (n_rows, n_flagged)).copy()
    extra_machine = np.zeros((n_rows, n_flagged))  # machine-seconds of copies/attempts
    winner_end = np.full((n_rows, n_flagged), -np.inf)  # copy / winning attempt end
    loser_end = np.full((n_rows, n_flagged), -np.inf)  # resume: losing attempts' end
    served_any = np.zeros((n_rows, n_flagged), dtype=bool)
    last_k = int(flag_k.max())

    k = int(flag_k[0])
    while True:
        c = grid_origin + k * checkpoint_interval
        running = (
            int(np.searchsorted(u_start, c, "right") - np.searchsorted(u_end, c, "right"))
            + ((f_start <= c) & (c < original_end)).sum(axis=1)
            + (winner_end > c).sum(axis=1)
            + np.where(loser_end > c, losers, 0).sum(axis=1)
        )
        free = np.maximum(capacity - running, 0)
        waiting = (flag_k <= k) & (f_end > c) & ~served_any
        served = waiting & (np.cumsum(np.where(waiting, need, 0), axis=1) <= free[:, None])
        if served.any():
            if policy == "relaunch":
                new_end = c + full
                original_end = np.where(served, c, original_end)
                extra = full
            elif policy == "copy":
                new_end = np.minimum(f_end, c + full)
                original_end = np.where(served, new_end, original_end)
                extra = new_end - c
            else:  # resume: remaining share of the work, fastest attempt kept
                share = (f_end - c) / np.where(f_latency > 0, f_latency, 1.0)
                run = share * full
                new_end = c + run
                original_end = np.where(served, c, original_end)
                lose = np.minimum(run, kill_delay)
                extra = run + losers * lose
                loser_end = np.where(served, c + lose, loser_end)
            task_end_new = np.where(served, new_end, task_end_new)
            winner_end = np.where(served, new_end, winner_end)
            extra_machine = np.where(served, extra, extra_machine)
            served_any |= served
        still_waiting = (flag_k <= k) & (f_end > c + checkpoint_interval) & ~served_any
        if k >= last_k and not still_waiting.any():
            break
        k += 1

    original_machine = (original_end - f_start).sum(axis=1)
    machine = base_machine - f_latency.sum() + original_machine + extra_machine.sum(axis=1)
    final_end = task_end_new.max(axis=1)
    if u_end.size:
        final_end = np.maximum(final_end, u_end[-1])
    jct = (final_end - first_start).reshape(n_settings, n_repeats)
    return jct, machine.reshape(n_settings, n_repeats)


# ----------------------------------------------------------------------------- inputs


def random_job(rng, n_tasks, origin, interval, kind):
    """start, end, flag of one job: flags on the grid inside [start, end) at one or several
    checkpoints; `kind`: spread, ties (equal starts, ends and flags), zero (zero-length
    tasks, never flagged), none (no flag), one_checkpoint (every flag at the first)."""
    if kind == "ties":
        start = np.full(n_tasks, origin + 0.3 * interval)
        end = start + np.repeat([1.5, 4.0], [n_tasks - n_tasks // 3, n_tasks // 3]) * interval
    elif kind == "zero":
        start = np.full(n_tasks, origin + interval)
        end = start.copy()
    else:
        start = origin + rng.uniform(0, 3 * interval, n_tasks)
        end = start + rng.lognormal(math.log(3 * interval), 0.8, n_tasks)
    first_k = np.floor((start - origin) / interval) + 1
    spread = 0 if kind in ("ties", "one_checkpoint") else rng.integers(0, 4, n_tasks)
    flag = origin + (first_k + spread) * interval
    flag = np.where(flag < end, flag, origin + first_k * interval)
    on = (flag >= start) & (flag < end)
    if kind == "none":
        on[:] = False
    elif kind != "one_checkpoint":
        on &= rng.random(n_tasks) < 0.6
    return start, end, np.where(on, flag, np.nan)


KINDS = ["spread", "ties", "zero", "none", "one_checkpoint"]
GRIDS = [(600.0, 300.0), (0.0, 60.0), (0.1, 0.3), (1e6 + 0.7, 0.1)]  # the last two round
MACHINES = [[0, 1, 2, 3, 5, 8], [100, 200, 300], [], [4]]


def jobs(n_jobs, seed):
    rng = np.random.default_rng(seed)
    for n in range(n_jobs):
        origin, interval = GRIDS[n % len(GRIDS)]
        kind = KINDS[n % len(KINDS)]
        n_tasks = 1 if n % 11 == 0 else int(rng.integers(2, 60))
        start, end, flag = random_job(rng, n_tasks, origin, interval, kind)
        yield rng, n, origin, interval, start, end, flag


def same_bits(new, old):
    new, old = np.asarray(new), np.asarray(old)
    assert new.shape == old.shape and new.dtype == old.dtype
    assert new.tobytes() == old.tobytes()


# ----------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("seed", range(4))
def test_readings_in_one_batch_equal_the_per_reading_loops(seed):
    for rng, n, origin, interval, start, end, flag in jobs(60, seed):
        n_repeats = int(rng.integers(1, 6))
        latency = end - start
        uniforms = rng.random((n_repeats, start.size))
        pools = [latency, latency, latency[latency < np.quantile(latency, 0.9)]]
        replacements = [
            jct.replacement_durations(pool if pool.size else latency, uniforms) for pool in pools
        ]
        froms = [["flag", "start", "start"], ["start"], ["flag"], ["start", "flag"]][n % 4]
        replacements = replacements[: len(froms)]
        machines = MACHINES[n % len(MACHINES)]
        base, per_reading = jct.readings_jcts(
            start, end, flag, replacements, froms, grid_origin=origin, machines=machines,
            checkpoint_interval=interval,
        )  # fmt: skip
        for replacement, relaunch_from, mitigated in zip(
            replacements, froms, per_reading, strict=True
        ):
            old_base, unlimited = old_mitigated_jct_unlimited(
                start, end, flag, replacement, relaunch_from=relaunch_from
            )
            _, limited = old_mitigated_jct_limited(
                start, end, flag, replacement, machines, origin, interval,
                relaunch_from=relaunch_from,
            )  # fmt: skip
            assert base == old_base
            same_bits(mitigated, np.concatenate([unlimited, limited.ravel()]))
            _, alone = jct.mitigated_jct_limited(
                start, end, flag, replacement, machines, origin, interval,
                relaunch_from=relaunch_from,
            )  # fmt: skip
            same_bits(alone, limited)


@pytest.mark.parametrize("seed", range(4))
def test_policies_in_one_batch_equal_the_per_policy_loops(seed):
    for rng, n, origin, interval, start, end, flag in jobs(60, seed):
        n_repeats = int(rng.integers(1, 6))
        n_attempts = int(rng.integers(1, 4))
        durations = np.stack(
            [
                jct.replacement_durations(end - start, rng.random((n_repeats, start.size)))
                for _ in range(n_attempts)
            ]
        )
        attempts = rng.integers(1, n_attempts + 1, start.size) if n % 2 else min(2, n_attempts)
        machines = [None, *MACHINES[n % len(MACHINES)]]
        kill_delay = [None, 0.0, 0.5 * interval, 7 * interval][n % 4]
        chosen = [list(POLICIES), ["resume"], ["copy", "relaunch"], ["resume", "relaunch"]]
        settings = dict(
            machines=machines, grid_origin=origin, checkpoint_interval=interval,
            resume_attempts=attempts, kill_delay=kill_delay,
        )  # fmt: skip
        batch = policies.simulate_policies(chosen[n % 4], start, end, flag, durations, **settings)
        for policy, (jct_new, machine_new) in zip(chosen[n % 4], batch, strict=True):
            jct_old, machine_old = old_simulate_policy(
                policy, start, end, flag, durations, **settings
            )
            same_bits(jct_new, jct_old)
            same_bits(machine_new, machine_old)
            jct_alone, machine_alone = policies.simulate_policy(
                policy, start, end, flag, durations, **settings
            )
            same_bits(jct_alone, jct_old)
            same_bits(machine_alone, machine_old)


def test_a_binding_queue_over_many_checkpoints():
    # every task flagged at its first checkpoint, one or two machines: the queue drains over
    # many checkpoints while rows with more machines have left the batch
    rng = np.random.default_rng(11)
    start = 600.0 + rng.uniform(0, 900, 80)
    end = start + rng.lognormal(8.0, 0.5, 80)
    flag = 600.0 + (np.floor((start - 600.0) / 300.0) + 1) * 300.0
    flag = np.where(flag < end, flag, np.nan)
    replacement = jct.replacement_durations(end - start, rng.random((3, 80)))
    machines = [0, 1, 2, 40, 79, 80, 200]
    for relaunch_from in ("flag", "start"):
        _, new = jct.mitigated_jct_limited(
            start, end, flag, replacement, machines, 600.0, 300.0, relaunch_from=relaunch_from
        )
        _, old = old_mitigated_jct_limited(
            start, end, flag, replacement, machines, 600.0, 300.0, relaunch_from=relaunch_from
        )
        same_bits(new, old)
    durations = np.stack([replacement, replacement[::-1]])
    for policy in POLICIES:
        arguments = dict(machines=[None, *machines], grid_origin=600.0, checkpoint_interval=300.0)
        new = policies.simulate_policy(policy, start, end, flag, durations, **arguments)
        old = old_simulate_policy(policy, start, end, flag, durations, **arguments)
        for a, b in zip(new, old, strict=True):
            same_bits(a, b)


def test_errors_come_in_the_per_policy_order():
    start, end = np.array([0.0, 0.0]), np.array([300.0, 900.0])
    flag = np.array([np.nan, 300.0])
    durations = np.ones((2, 1, 2))
    cases = [
        (["relaunch", "nope"], dict(), "unknown policy 'nope'"),
        (["nope", "relaunch"], dict(kill_delay=-1.0), "unknown policy 'nope'"),
        (["relaunch", "nope"], dict(kill_delay=-1.0), "kill_delay must be"),
        (["relaunch", "resume"], dict(resume_attempts=3), "resume_attempts must lie"),
        (["resume", "copy"], dict(resume_attempts=3, kill_delay=-1.0), "resume_attempts"),
        (["copy", "resume"], dict(resume_attempts=3, kill_delay=-1.0), "kill_delay must be"),
        (["copy"], dict(machines=[-1]), "machines must be ints"),
    ]
    for chosen, arguments, message in cases:
        with pytest.raises(ValueError, match=message):
            policies.simulate_policies(chosen, start, end, flag, durations, **arguments)
    # job_jcts per reading: the first reading's limited run checks the machines first
    with pytest.raises(ValueError, match="machines must be ints"):
        jct.readings_jcts(
            start, end, flag, [durations[0], durations[0]], ["flag", "nope"],
            grid_origin=0.0, machines=[-1],
        )  # fmt: skip
    with pytest.raises(ValueError, match="relaunch_from must be one of"):
        jct.readings_jcts(
            start, end, flag, [durations[0], durations[0]], ["flag", "nope"],
            grid_origin=0.0, machines=[1],
        )  # fmt: skip
    with pytest.raises(ValueError, match="machines must be ints"):
        jct.readings_jcts(
            start, end, flag, [durations[0], durations[0]], ["flag", "start"],
            grid_origin=0.0, machines=[-1],
        )  # fmt: skip
