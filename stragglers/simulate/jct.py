"""Job-completion-time simulation of straggler mitigation (NURD, MLSys 2022: §5 and §7.3): a
method's flags become a reduction of the job's completion time by relaunching flagged tasks,
with more machines than tasks (Algorithm 2) or m machines (Algorithm 3). A relaunched copy's
duration is drawn from the job's own latencies through uniforms that depend only on (seed,
job id, repeat, task), so every method meets the same random numbers; where the copy ends has
two readings of §7.3 (`simulation.relaunch`), which decide the sign of the headline result.
The model and its consequences: docs/simulation.md.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

DEFAULT_MACHINES: tuple[int, ...] = (100, 200, 300, 400, 500, 600, 700, 800, 900)  # Figs 6-9
CHECKPOINT_INTERVAL = 300.0  # seconds between checkpoints
# A flag time further than this from the checkpoint grid is an input error, not rounding.
GRID_TOLERANCE = 1e-3  # seconds
# Slack when rounding a copy's end up to the next checkpoint: visiting a checkpoint early is
# harmless (nothing changes there), missing one would be a wrong answer.
_CEIL_SLACK = 1e-9

ALGORITHM_UNLIMITED = "unlimited"  # Algorithm 2
ALGORITHM_LIMITED = "limited"  # Algorithm 3
ID_COLUMNS = ["dataset", "method", "job_id"]  # a job's rows in the prediction files
RESULT_COLUMNS = ["algorithm", "machines", "repeat", "jct_base", "jct_mitigated", "reduction"]
RELAUNCH_FROM = ("flag", "start")
# setting simulation.relaunch -> (where the copy's duration counts from, which latencies it is
# drawn from); the first is the default
RELAUNCH_READINGS: dict[str, tuple[str, str]] = {
    "from_flag": ("flag", "all"),  # end = launch time + draw from every task's latency
    "replace_latency": ("start", "all"),  # end = task start + draw ("replace the latency")
    # the same, drawn from the non-stragglers' latencies (latency < tau) only
    "replace_latency_non_straggler": ("start", "non_stragglers"),
}


def relaunch_reading(name: str) -> tuple[str, str]:
    """(relaunch_from, draw pool) of a `simulation.relaunch` value; an unknown one is an error
    naming the setting."""
    if name not in RELAUNCH_READINGS:
        raise ValueError(
            f"simulation.relaunch must be one of {list(RELAUNCH_READINGS)}, got {name!r}"
        )
    return RELAUNCH_READINGS[name]


def draw_pool(latency: np.ndarray, is_straggler: np.ndarray, pool: str) -> np.ndarray:
    """The latencies a relaunched copy's duration is drawn from: every task's (`all`) or the
    non-stragglers' (`non_stragglers`; every task's if the job has none)."""
    latency = np.asarray(latency, dtype=np.float64)
    if pool == "all":
        return latency
    if pool == "non_stragglers":
        kept = latency[~np.asarray(is_straggler, dtype=bool)]
        return kept if kept.size else latency
    raise ValueError(f"draw pool must be 'all' or 'non_stragglers', got {pool!r}")


# ----------------------------------------------------------------------------- random numbers


def replacement_uniforms(job_id: str, n_tasks: int, n_repeats: int, seed: int) -> np.ndarray:
    """Uniforms in [0, 1), shape (n_repeats, n_tasks), fixed by (seed, job_id).

    The job id enters through SHA-256 (not Python's salted ``hash``), so the stream is the
    same in every process and on every run; row r, column i is the draw for repeat r, task i.
    """
    if not isinstance(job_id, str) or not job_id:
        raise ValueError(f"replacement_uniforms: job_id must be a non-empty str, got {job_id!r}")
    counts = (("n_tasks", n_tasks, 0), ("n_repeats", n_repeats, 1), ("seed", seed, 0))
    for name, value, low in counts:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(
                f"replacement_uniforms(job {job_id!r}): {name} must be an int >= {low}, "
                f"got {value!r}"
            )
    job_key = int.from_bytes(hashlib.sha256(job_id.encode("utf-8")).digest()[:16], "little")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), job_key]))
    return rng.random((int(n_repeats), int(n_tasks)))


def replacement_durations(latency: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Map uniforms through the empirical distribution of ``latency``: sort(latency)[floor(u*n)].

    Returns an array of the uniforms' shape (normally (n_repeats, n_tasks)).
    """
    latency = np.asarray(latency, dtype=np.float64)
    uniforms = np.asarray(uniforms, dtype=np.float64)
    if latency.ndim != 1 or latency.size == 0:
        raise ValueError(
            "replacement_durations: latency must be a non-empty 1-D array, "
            f"got shape {latency.shape}"
        )
    bad = np.flatnonzero(~np.isfinite(latency) | (latency < 0))
    if bad.size:
        raise ValueError(
            "replacement_durations: latency must be finite and >= 0; "
            f"task {bad[0]} has {float(latency[bad[0]])}"
        )
    if uniforms.size and not np.all((uniforms >= 0) & (uniforms < 1)):
        raise ValueError("replacement_durations: uniforms must lie in [0, 1)")
    n = latency.size
    # u * n can round up to n for u within an ulp of 1.
    index = np.minimum(np.floor(uniforms * n).astype(np.int64), n - 1)
    return np.sort(latency)[index]


# ----------------------------------------------------------------------------- validation


def _where(job_id: str | None) -> str:
    return f"job {job_id!r}: " if job_id is not None else ""


def _validate_job(task_start, task_end, flag_time, replacement, job_id):
    """Arrays as float64 with every documented precondition checked; raises ValueError."""
    where = _where(job_id)
    start = np.asarray(task_start, dtype=np.float64)
    end = np.asarray(task_end, dtype=np.float64)
    flag = np.asarray(flag_time, dtype=np.float64)
    repl = np.asarray(replacement, dtype=np.float64)
    if start.ndim != 1 or start.size == 0:
        raise ValueError(
            f"{where}task_start must be a non-empty 1-D array, got shape {start.shape}"
        )
    n_tasks = start.size
    for name, array in (("task_end", end), ("flag_time", flag)):
        if array.shape != (n_tasks,):
            raise ValueError(f"{where}{name} has shape {array.shape}, task_start has ({n_tasks},)")
    if repl.ndim != 2 or repl.shape[1] != n_tasks or repl.shape[0] == 0:
        raise ValueError(
            f"{where}replacement must have shape (n_repeats >= 1, n_tasks={n_tasks}), "
            f"got {repl.shape}"
        )
    bad = np.flatnonzero(~np.isfinite(start) | ~np.isfinite(end) | (end < start))
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"{where}task {i}: need finite task_start <= task_end, "
            f"got {float(start[i])}, {float(end[i])}"
        )
    flagged = ~np.isnan(flag)
    bad = np.flatnonzero(flagged & ~((flag >= start) & (flag < end)))
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"{where}task {i}: flag_time {float(flag[i])} outside [task_start, task_end) = "
            f"[{float(start[i])}, {float(end[i])})"
        )
    if not np.all(np.isfinite(repl) & (repl >= 0)):
        r, i = np.argwhere(~(np.isfinite(repl) & (repl >= 0)))[0]
        raise ValueError(
            f"{where}replacement[{r}, {i}] = {float(repl[r, i])}; durations must be finite and >= 0"
        )
    return start, end, flag, flagged, repl


def _validate_relaunch_from(relaunch_from, job_id) -> None:
    if relaunch_from not in RELAUNCH_FROM:
        raise ValueError(
            f"{_where(job_id)}relaunch_from must be one of {list(RELAUNCH_FROM)} "
            f"(setting simulation.relaunch), got {relaunch_from!r}"
        )


def _validate_machines(machines, job_id) -> np.ndarray:
    values = list(machines)
    for m in values:
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
            raise ValueError(f"{_where(job_id)}machines must be ints >= 0, got {m!r} in {values!r}")
    return np.asarray(values, dtype=np.int64)


def _grid_index(
    times: np.ndarray, grid_origin: float, checkpoint_interval: float, job_id
) -> np.ndarray:
    """Checkpoint numbers k with times == grid_origin + k * checkpoint_interval."""
    k = np.rint((times - grid_origin) / checkpoint_interval)
    off = np.abs(grid_origin + k * checkpoint_interval - times)
    if np.any(off > GRID_TOLERANCE):
        t = times[np.argmax(off)]
        raise ValueError(
            f"{_where(job_id)}flag_time {float(t)} is not on the checkpoint grid "
            f"{grid_origin!r} + k * {checkpoint_interval!r}"
        )
    return k.astype(np.int64)


# ----------------------------------------------------------------------------- completion times


def job_completion_time(task_start: np.ndarray, task_end: np.ndarray) -> float:
    """JCT as in the trace: last task end minus first task start."""
    return float(np.max(task_end) - np.min(task_start))


def jct_reduction(jct_base: float, jct_mitigated: np.ndarray) -> np.ndarray:
    """(jct_base - jct_mitigated) / jct_base; 0 for a zero-length job (nothing can be flagged)."""
    jct_mitigated = np.asarray(jct_mitigated, dtype=np.float64)
    if jct_base <= 0:
        return np.zeros_like(jct_mitigated)
    return (jct_base - jct_mitigated) / jct_base


def _unlimited_end(start, end, flag, flagged, repl, relaunch_from) -> np.ndarray:
    """Algorithm 2's mitigated job end per repeat, on validated arrays."""
    # Flagged tasks end at flag (or start) + replacement; the killed copy's end no longer counts.
    origin = np.where(flagged, flag, 0.0) if relaunch_from == "flag" else start
    new_end = np.where(flagged, origin + repl, end)  # (n_repeats, n_tasks)
    return new_end.max(axis=1)


def mitigated_jct_unlimited(
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
    return jct_base, _unlimited_end(start, end, flag, flagged, repl, relaunch_from) - first_start


def _validate_grid(grid_origin, checkpoint_interval, job_id) -> tuple[float, float]:
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
    return float(grid_origin), float(checkpoint_interval)


def mitigated_jct_limited(
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    replacement: np.ndarray,
    machines: Sequence[int],
    grid_origin: float,
    checkpoint_interval: float = CHECKPOINT_INTERVAL,
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
    grid_origin, checkpoint_interval = _validate_grid(grid_origin, checkpoint_interval, job_id)
    jct_base = float(end.max() - start.min())
    (limited,) = _limited_jcts(
        start,
        end,
        flag,
        flagged,
        [repl],
        [relaunch_from],
        capacity_per_setting,
        grid_origin,
        checkpoint_interval,
        job_id,
    )
    return jct_base, limited


def _limited_jcts(
    start: np.ndarray,
    end: np.ndarray,
    flag: np.ndarray,
    flagged: np.ndarray,
    replacements: Sequence[np.ndarray],
    relaunch_froms: Sequence[str],
    capacity_per_setting: np.ndarray,
    grid_origin: float,
    checkpoint_interval: float,
    job_id,
) -> list[np.ndarray]:
    """Algorithm 3 on validated arrays for several readings of one job at once (one
    replacement and relaunch_from each, the same number of repeats): per reading,
    jct_mitigated of shape (n_settings, n_repeats).

    Every (reading, machine count, repeat) is a row of one batch. Rows never interact: a row
    changes only at the checkpoints its own loop would visit, and at the others the loop
    visits for other rows nothing changes in it (no machine frees, no task joins the queue),
    so each row ends as simulated alone."""
    n_repeats = replacements[0].shape[0]
    n_settings = capacity_per_setting.size
    first_start = start.min()
    jct_base = float(end.max() - first_start)
    if n_settings == 0:
        return [np.empty((0, n_repeats)) for _ in replacements]
    if not flagged.any():
        return [np.full((n_settings, n_repeats), jct_base) for _ in replacements]

    # Flagged tasks as columns, in service order: flag checkpoint, then task position.
    positions = np.flatnonzero(flagged)
    flag_k = _grid_index(flag[positions], grid_origin, checkpoint_interval, job_id)
    order = np.lexsort((positions, flag_k))
    positions, flag_k = positions[order], flag_k[order]
    f_start, f_end = start[positions], end[positions]
    n_flagged = positions.size

    # Rows: (reading, machine count, repeat), reading major, then machine-count major.
    n_readings = len(replacements)
    capacity = np.tile(np.repeat(capacity_per_setting, n_repeats), n_readings)  # (B,)
    f_repl = np.concatenate(
        [np.tile(repl[:, positions], (n_settings, 1)) for repl in replacements]
    )  # (B, K)
    from_flag = [relaunch_from == "flag" for relaunch_from in relaunch_froms]
    if all(from_flag) or not any(from_flag):
        copy_origin = None  # every row alike: c, or the task's start
    else:  # per row: c (nan here, filled per checkpoint) or the task's start
        copy_origin = np.concatenate(
            [np.broadcast_to(np.nan if f else f_start, (n_settings * n_repeats, n_flagged))
             for f in from_flag]
        )  # fmt: skip
        row_from_flag = np.repeat(from_flag, n_settings * n_repeats)
    n_rows = capacity.size

    # Unflagged tasks run exactly as in the trace in every row: count them with sorted times.
    u_start = np.sort(start[~flagged])
    u_end = np.sort(end[~flagged])

    original_end = np.broadcast_to(f_end, (n_rows, n_flagged)).copy()  # becomes c when killed
    copy_end = np.full((n_rows, n_flagged), -np.inf)  # relaunched copy's end
    relaunched = np.zeros((n_rows, n_flagged), dtype=bool)
    # the distinct flag checkpoints, ascending (flag_k is sorted)
    flag_checkpoints = flag_k[np.concatenate([[True], flag_k[1:] != flag_k[:-1]])]
    # After the last flag checkpoint a row with no task waiting never changes again: its end
    # is taken then and the row leaves the batch (`live`: the batch's rows' numbers).
    live = np.arange(n_rows)
    final_end = np.empty(n_rows)

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
            if copy_origin is None:
                if from_flag[0]:
                    copy_end[served] = c + f_repl[served]
                else:
                    copy_end[served] = (f_start[None, :] + f_repl)[served]
            else:
                copy_origin[row_from_flag] = c
                copy_end[served] = (copy_origin + f_repl)[served]
            relaunched |= served

        # Next checkpoint where some row can change.
        candidates = []
        later = np.searchsorted(flag_checkpoints, k, "right")
        if later < flag_checkpoints.size:
            candidates.append(int(flag_checkpoints[later]))
        rows_waiting = (waiting & ~served).any(axis=1)
        if not candidates and not rows_waiting.all():
            done = ~rows_waiting
            final_end[live[done]] = np.where(relaunched[done], copy_end[done], f_end).max(axis=1)
            live, capacity, f_repl = (
                live[rows_waiting],
                capacity[rows_waiting],
                f_repl[rows_waiting],
            )
            original_end, copy_end = original_end[rows_waiting], copy_end[rows_waiting]
            relaunched, served = relaunched[rows_waiting], served[rows_waiting]
            if copy_origin is not None:
                copy_origin = copy_origin[rows_waiting]
                row_from_flag = row_from_flag[rows_waiting]
            rows_waiting = rows_waiting[rows_waiting]
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

    if live.size:
        final_end[live] = np.where(relaunched, copy_end, f_end).max(axis=1)
    if u_end.size:
        final_end = np.maximum(final_end, u_end[-1])
    per_reading = (final_end - first_start).reshape(n_readings, n_settings, n_repeats)
    return list(per_reading)


# ----------------------------------------------------------------------------- reductions


def simulate_unlimited(
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    replacement: np.ndarray,
    *,
    job_id: str | None = None,
    relaunch_from: str = "flag",
) -> np.ndarray:
    """Algorithm 2 reductions in JCT, shape (n_repeats,); negative when relaunching hurt."""
    jct_base, jct_mitigated = mitigated_jct_unlimited(
        task_start, task_end, flag_time, replacement, job_id=job_id, relaunch_from=relaunch_from
    )
    return jct_reduction(jct_base, jct_mitigated)


def simulate_limited(
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    replacement: np.ndarray,
    machines: Sequence[int],
    grid_origin: float,
    checkpoint_interval: float = CHECKPOINT_INTERVAL,
    *,
    job_id: str | None = None,
    relaunch_from: str = "flag",
) -> np.ndarray:
    """Algorithm 3 reductions in JCT, shape (len(machines), n_repeats).

    Flag times must lie on the job's grid ``grid_origin + k * checkpoint_interval`` (computed
    that way; up to GRID_TOLERANCE off is taken as rounding and snapped to the grid).
    """
    jct_base, jct_mitigated = mitigated_jct_limited(
        task_start,
        task_end,
        flag_time,
        replacement,
        machines,
        grid_origin,
        checkpoint_interval,
        job_id=job_id,
        relaunch_from=relaunch_from,
    )
    return jct_reduction(jct_base, jct_mitigated)


def job_jcts(
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    replacement: np.ndarray,
    *,
    grid_origin: float,
    machines: Sequence[int] = DEFAULT_MACHINES,
    checkpoint_interval: float = CHECKPOINT_INTERVAL,
    job_id: str | None = None,
    relaunch_from: str = "flag",
) -> tuple[float, np.ndarray]:
    """Both algorithms for one job: (jct_base, jct_mitigated of shape (n_repeats * (1 +
    len(machines)),)), Algorithm 2's repeats first, then Algorithm 3's, machine-count major:
    the values of `simulate_job`'s rows."""
    jct_base, (mitigated,) = readings_jcts(
        task_start,
        task_end,
        flag_time,
        [replacement],
        [relaunch_from],
        grid_origin=grid_origin,
        machines=machines,
        checkpoint_interval=checkpoint_interval,
        job_id=job_id,
    )
    return jct_base, mitigated


def readings_jcts(
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    replacements: Sequence[np.ndarray],
    relaunch_froms: Sequence[str],
    *,
    grid_origin: float,
    machines: Sequence[int] = DEFAULT_MACHINES,
    checkpoint_interval: float = CHECKPOINT_INTERVAL,
    job_id: str | None = None,
) -> tuple[float, list[np.ndarray]]:
    """`job_jcts` of one job under several readings of the relaunch (a replacement and a
    relaunch_from each): (jct_base, per reading job_jcts's jct_mitigated). The inputs are
    checked once per reading and Algorithm 3 runs the readings in one batch
    (`_limited_jcts`); the errors and values are those of `job_jcts` called per reading."""
    if len(replacements) != len(relaunch_froms) or not replacements:
        raise ValueError(
            f"{_where(job_id)}need one relaunch_from per replacement, at least one; got "
            f"{len(replacements)} and {len(relaunch_froms)}"
        )
    checked = []
    for n, (replacement, relaunch_from) in enumerate(zip(replacements, relaunch_froms)):
        start, end, flag, flagged, repl = _validate_job(
            task_start, task_end, flag_time, replacement, job_id
        )
        _validate_relaunch_from(relaunch_from, job_id)
        checked.append(repl)
        if n == 0:  # job_jcts's order: the first reading's checks, then the machines'
            capacity_per_setting = _validate_machines(machines, job_id)
            grid_origin, checkpoint_interval = _validate_grid(
                grid_origin, checkpoint_interval, job_id
            )
    n_repeats = {repl.shape[0] for repl in checked}
    if len(n_repeats) > 1:
        raise ValueError(f"{_where(job_id)}replacements differ in repeats: {sorted(n_repeats)}")
    first_start = start.min()
    jct_base = float(end.max() - first_start)
    limited = _limited_jcts(
        start,
        end,
        flag,
        flagged,
        checked,
        relaunch_froms,
        capacity_per_setting,
        grid_origin,
        checkpoint_interval,
        job_id,
    )
    return jct_base, [
        np.concatenate(
            [
                _unlimited_end(start, end, flag, flagged, repl, relaunch_from) - first_start,
                per_setting.ravel(),
            ]
        )  # fmt: skip
        for repl, relaunch_from, per_setting in zip(checked, relaunch_froms, limited, strict=True)
    ]


def _job_row_keys(machines: Sequence[int], n_repeats: int) -> dict[str, np.ndarray]:
    """A job's algorithm, machines (values, NA mask) and repeat per row, in job_jcts's order."""
    n_settings = len(machines)
    return {
        "algorithm": np.repeat(
            np.array([ALGORITHM_UNLIMITED, ALGORITHM_LIMITED], dtype=object),
            [n_repeats, n_settings * n_repeats],
        ),
        "machines": np.concatenate(
            [np.zeros(n_repeats, np.int64), np.repeat(np.asarray(machines, np.int64), n_repeats)]
        ),
        "machines_na": np.arange(n_repeats * (n_settings + 1)) < n_repeats,  # Algorithm 2
        "repeat": np.concatenate([np.arange(n_repeats), np.tile(np.arange(n_repeats), n_settings)]),
    }


def simulate_job(
    task_start: np.ndarray,
    task_end: np.ndarray,
    flag_time: np.ndarray,
    replacement: np.ndarray,
    **settings: Any,
) -> pd.DataFrame:
    """Both algorithms for one job as a tidy frame with columns RESULT_COLUMNS (`settings`:
    `job_jcts`'s keyword arguments; grid_origin is required).

    Algorithm 2 rows have ``machines`` = <NA>; one row per repeat (and machine count).
    """
    machines = list(settings.pop("machines", DEFAULT_MACHINES))
    jct_base, jct_mitigated = job_jcts(
        task_start, task_end, flag_time, replacement, machines=machines, **settings
    )
    keys = _job_row_keys(machines, np.asarray(replacement).shape[0])
    return pd.DataFrame(
        {
            "algorithm": keys["algorithm"],
            "machines": pd.arrays.IntegerArray(keys["machines"], keys["machines_na"]),
            "repeat": keys["repeat"],
            "jct_base": jct_base,
            "jct_mitigated": jct_mitigated,
            "reduction": jct_reduction(jct_base, jct_mitigated),
        }
    )


def jobs_in_order(tasks: pd.DataFrame) -> Iterator[tuple[str, str, str, np.ndarray]]:
    """(dataset, method, job_id, row positions sorted by task) of every job of the prediction
    rows `tasks`, in the order of `tasks.groupby(ID_COLUMNS, sort=False)`: one sort of the
    whole table instead of a group frame and its sort per job. A job's tasks are unique
    (`stragglers.evaluate.metrics.validate_predictions`), so the order within a job is
    `sort_values("task")`'s."""
    if tasks.empty:
        return
    codes = tasks.groupby(ID_COLUMNS, sort=False).ngroup().to_numpy()
    order = np.lexsort((tasks["task"].to_numpy(), codes))
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    keys = [tasks[column].to_numpy() for column in ID_COLUMNS]
    for rows in np.split(order, bounds):
        first = rows[0]
        yield keys[0][first], keys[1][first], keys[2][first], rows


def _frame_of_jobs(
    ids: list[tuple], row_keys: dict[str, np.ndarray], columns: dict[str, list]
) -> pd.DataFrame:
    """The rows of equal-sized per-job blocks as one frame: ID_COLUMNS from `ids` (one tuple
    per block), the blocks' row keys (`_job_row_keys`, the same in every block) tiled, then
    `columns` (per column, one array or scalar per block), in that order."""
    n_blocks = len(ids)
    size = row_keys["repeat"].size
    frame = {
        name: np.repeat(np.array([i[n] for i in ids], dtype=object), size)
        for n, name in enumerate(ID_COLUMNS)
    }
    for name, values in row_keys.items():
        if name == "machines_na":
            continue
        tiled = np.tile(values, n_blocks)
        if name == "machines":
            tiled = pd.arrays.IntegerArray(tiled, np.tile(row_keys["machines_na"], n_blocks))
        frame[name] = tiled
    for name, blocks in columns.items():
        if all(np.ndim(b) == 0 for b in blocks):  # one value per block: one concatenation
            frame[name] = np.repeat(np.concatenate([np.reshape(b, 1) for b in blocks]), size)
        else:
            frame[name] = np.concatenate([np.broadcast_to(b, (size,)) for b in blocks])
    return pd.DataFrame(frame)


def simulate_jobs(
    tasks: pd.DataFrame,
    ok_jobs: set,
    *,
    grid_origin: float,
    checkpoint_interval: float,
    machines: Sequence[int],
    repeats: int,
    seed: int,
    relaunch: str = "from_flag",
) -> pd.DataFrame:
    """`simulate_job` for every job of `ok_jobs` in the prediction rows `tasks` (one method's,
    or several), under every reading of the relaunch (RELAUNCH_READINGS) with the same draws:
    column `reading` names it and `primary` marks `relaunch`, the configured one. The rows
    are those of `simulate_job`'s frames concatenated; the frame is built once, from arrays
    (a frame per job and reading cost more than the simulation at the default size)."""
    relaunch_reading(relaunch)  # an unknown setting stops here, named
    readings = [relaunch] + [r for r in RELAUNCH_READINGS if r != relaunch]
    relaunch_froms = [relaunch_reading(r)[0] for r in readings]
    pools = [relaunch_reading(r)[1] for r in readings]
    machines = list(machines)
    latency_all = tasks["latency"].to_numpy(float)
    start_all = tasks["task_start"].to_numpy(float)
    end_all = tasks["task_end"].to_numpy(float)
    flag_all = tasks["flag_time"].to_numpy(float)
    straggler_all = tasks["is_straggler"].to_numpy(bool)
    ids, columns = [], {c: [] for c in ("jct_base", "jct_mitigated", "reduction")}
    reading_column, primary_column = [], []
    for dataset, method, job_id, rows in jobs_in_order(tasks):
        if job_id not in ok_jobs:
            continue
        latency = latency_all[rows]
        start, end, flag = start_all[rows], end_all[rows], flag_all[rows]
        uniforms = replacement_uniforms(str(job_id), len(latency), repeats, seed)
        settings = dict(
            grid_origin=grid_origin,
            machines=machines,
            checkpoint_interval=checkpoint_interval,
            job_id=str(job_id),
        )
        # one draw per pool: the readings drawing from the same latencies share it
        draws: dict[str, np.ndarray] = {}
        for pool in pools:
            if pool in draws:
                continue
            try:
                draws[pool] = replacement_durations(
                    draw_pool(latency, straggler_all[rows], pool), uniforms
                )
            except ValueError:
                if draws:  # a reading per call raised the first reading's input errors first
                    job_jcts(
                        start, end, flag, draws[pools[0]], relaunch_from=relaunch_froms[0],
                        **settings,
                    )  # fmt: skip
                raise
        jct_base, per_reading = readings_jcts(
            start, end, flag, [draws[pool] for pool in pools], relaunch_froms, **settings
        )
        for reading, jct_mitigated in zip(readings, per_reading, strict=True):
            ids.append((dataset, method, str(job_id)))
            columns["jct_base"].append(jct_base)
            columns["jct_mitigated"].append(jct_mitigated)
            columns["reduction"].append(jct_reduction(jct_base, jct_mitigated))
            reading_column.append(np.array(reading, dtype=object))
            primary_column.append(reading == relaunch)
    if not ids:
        return pd.DataFrame(columns=[*ID_COLUMNS, *RESULT_COLUMNS, "reading", "primary"])
    columns["reading"] = reading_column
    columns["primary"] = primary_column
    return _frame_of_jobs(ids, _job_row_keys(machines, repeats), columns)
