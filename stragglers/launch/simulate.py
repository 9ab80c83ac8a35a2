"""Completion time when predicted stragglers are held back at launch (as Wrangler delays them):
a task predicted to straggle waits one scheduling interval and is placed again, its duration
redrawn with the common random numbers of `stragglers.simulate.jct`; Hadoop-NS (nothing held
back) is the baseline. Per (job, repeat): the JCT reduction, machine time and whether the job
met its deadline, for PoCD (docs/methods.md, "Mitigation").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from stragglers.launch.tasks import job_threshold
from stragglers.simulate.jct import replacement_durations, replacement_uniforms
from stragglers.simulate.policies import reference_jct


def hold_back_ends(
    task_start: np.ndarray,
    task_end: np.ndarray,
    held_back: np.ndarray,
    interval: float,
    replacement: np.ndarray,
) -> np.ndarray:
    """(n_repeats, n_tasks) task ends: held-back tasks start `interval` later with the
    repeat's redrawn duration; `replacement` is (n_repeats, n_tasks)."""
    start = np.asarray(task_start, dtype=float)
    held = np.asarray(held_back, dtype=bool)
    return np.where(
        held[None, :],
        start[None, :] + interval + replacement,
        np.asarray(task_end, dtype=float)[None, :],
    )


def simulate_hold_back_job(
    job_id: str,
    task_start: np.ndarray,
    task_end: np.ndarray,
    held_back: np.ndarray,
    interval: float,
    threshold: float,
    n_repeats: int,
    seed: int,
    deadline_factors: Sequence[float] = (1.0, 1.1, 1.25),
) -> pd.DataFrame:
    """One row per repeat (see the module docstring)."""
    start, end = np.asarray(task_start, dtype=float), np.asarray(task_end, dtype=float)
    latency = end - start
    uniforms = replacement_uniforms(str(job_id), len(start), n_repeats, seed)
    replacement = replacement_durations(latency, uniforms)
    ends = hold_back_ends(start, end, held_back, interval, replacement)
    origin = start.min()
    jct_base = float(end.max() - origin)
    jct = ends.max(axis=1) - origin
    held = np.asarray(held_back, dtype=bool)
    machine_time = np.where(held[None, :], replacement, latency[None, :]).sum(axis=1)
    reference = reference_jct(start, end, threshold)
    frame = pd.DataFrame(
        {
            "job_id": str(job_id),
            "repeat": np.arange(n_repeats),
            "n_held_back": int(held.sum()),
            "jct_base": jct_base,
            "jct_mitigated": jct,
            "reduction": (jct_base - jct) / jct_base if jct_base > 0 else 0.0,
            "machine_time_base": float(latency.sum()),
            "machine_time_mitigated": machine_time,
            "reference_jct": reference,
        }
    )
    for factor in deadline_factors:
        frame[f"met_base_{factor:g}"] = jct_base <= factor * reference
        frame[f"met_{factor:g}"] = jct <= factor * reference
    return frame


def simulate_hold_back(
    predictions: pd.DataFrame,
    interval: float,
    straggler_quantile: float,
    n_repeats: int,
    seed: int,
    deadline_factors: Sequence[float] = (1.0, 1.1, 1.25),
) -> pd.DataFrame:
    """Every job of one (dataset, method)'s launch predictions (the replay's task format)."""
    frames = []
    for job_id, tasks in predictions.groupby("job_id", sort=True):
        start, end = tasks["task_start"].to_numpy(float), tasks["task_end"].to_numpy(float)
        threshold = job_threshold(end - start, "p90", straggler_quantile)
        frame = simulate_hold_back_job(
            str(job_id),
            start,
            end,
            tasks["flagged"].to_numpy(bool),
            interval,
            threshold,
            n_repeats,
            seed,
            deadline_factors,
        )
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(predictions):
        out.insert(0, "method", predictions["method"].iloc[0])
        out.insert(0, "dataset", predictions["dataset"].iloc[0])
    return out


def hold_back_summary(frame: pd.DataFrame, deadline_factors: Sequence[float]) -> pd.DataFrame:
    """Per (dataset, method): mean and median JCT reduction, machine time ratio, PoCD."""
    if frame.empty:
        return pd.DataFrame()
    grouped = frame.groupby(["dataset", "method"], sort=False)
    out = grouped.agg(
        jobs=("job_id", "nunique"),
        held_back_per_job=("n_held_back", "mean"),
        mean_reduction=("reduction", "mean"),
        median_reduction=("reduction", "median"),
        machine_time_base=("machine_time_base", "sum"),
        machine_time=("machine_time_mitigated", "sum"),
    ).reset_index()
    out["machine_time_ratio"] = out["machine_time"] / out["machine_time_base"]
    for factor in deadline_factors:
        out[f"PoCD_base_{factor:g}"] = grouped[f"met_base_{factor:g}"].mean().to_numpy()
        out[f"PoCD_{factor:g}"] = grouped[f"met_{factor:g}"].mean().to_numpy()
    return out.drop(columns=["machine_time_base", "machine_time"])
