"""Small in-memory jobs with a known structure, for replay and method tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stragglers.formats.datasets import Feature
from stragglers.formats.jobs import job_from_frame
from stragglers.replay.history import JobHistory

FEATURES = ["cpu", "io", "noise", "evictions_so_far"]
LAST = np.array([False, False, False, True])


def make_job_frame(
    n_tasks: int = 200,
    seed: int = 0,
    straggler_share: float = 0.1,
    origin: float = 600.0,
    step: float = 300.0,
) -> pd.DataFrame:
    """Tasks start within the first hour; stragglers (slow machines) run 3-6x longer and show
    a high `io` value in every window while they run; `cpu` is mildly informative."""
    rng = np.random.default_rng(seed)
    start = origin + rng.uniform(0, 3600, n_tasks)
    slow = rng.random(n_tasks) < straggler_share
    base = rng.lognormal(np.log(3000), 0.25, n_tasks)
    latency = np.where(slow, base * rng.uniform(3, 6, n_tasks), base)
    end = start + latency
    rows = []
    for t in range(n_tasks):
        edges = (
            np.arange(np.floor((start[t] - origin) / step) + 1, np.ceil((end[t] - origin) / step))
            * step
            + origin
        )
        bounds = np.concatenate([[start[t]], edges, [end[t]]])
        for w0, w1 in zip(bounds[:-1], bounds[1:]):
            if w1 <= w0:
                continue
            rows.append(
                {
                    "task": t,
                    "window_start": w0,
                    "window_end": w1,
                    "available_from": w1,
                    "cpu": rng.normal(0.5 - 0.1 * slow[t], 0.1),
                    "io": rng.normal(1.0 + 2.0 * slow[t], 0.3),
                    "noise": rng.normal(0, 1),
                    "evictions_so_far": 0.0,
                    "task_id": str(t),
                    "task_start": start[t],
                    "task_end": end[t],
                    "latency": latency[t],
                    "machine_id": str(t % 17),
                    "evictions": 0,
                    "failures": 0,
                }
            )
    return pd.DataFrame(rows)


def make_job(n_tasks: int = 200, seed: int = 0, **kwargs):
    return job_from_frame(f"job{seed}", make_job_frame(n_tasks, seed, **kwargs), FEATURES)


def hand_job(windows: list[list[tuple[float, float]]], name: str = "hand"):
    """Task i has windows (duration, value of the single feature `x`), from t = 1000 + 7 i."""
    rows = []
    for task, task_windows in enumerate(windows):
        t = 1000.0 + 7 * task
        start = t
        for duration, value in task_windows:
            rows.append(
                {
                    "task": task,
                    "window_start": t,
                    "window_end": t + duration,
                    "available_from": t + duration,
                    "x": value,
                }
            )
            t += duration
        for row in rows:
            if row["task"] == task:
                row.update(
                    task_id=str(task),
                    task_start=start,
                    task_end=t,
                    latency=t - start,
                    machine_id="m",
                    evictions=0,
                    failures=0,
                )
    return job_from_frame(name, pd.DataFrame(rows), ["x"])


# ---- converted jobs on disk and a history over them (cross-job methods) -------------------


def write_jobs(folder, n_jobs=6, spacing=12000.0, n_tasks=60):
    """Jobs starting `spacing` seconds apart, written as converted files + manifest."""
    rows = []
    (folder / "jobs").mkdir()
    for i in range(n_jobs):
        frame = make_job_frame(n_tasks, seed=i, origin=600.0 + spacing * i)
        path = f"jobs/job{i}.parquet"
        frame.to_parquet(folder / path)
        rows.append(
            {
                "dataset": "t",
                "job_id": f"job{i}",
                "n_tasks": n_tasks,
                "n_windows": len(frame),
                "shard": i % 2,
                "path": path,
                "job_start": frame["task_start"].min(),
                "job_end": frame["task_end"].max(),
            }
        )
    return pd.DataFrame(rows)


class RecordingHistory(JobHistory):
    """Records every job a method loaded and the time it asked about."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loaded: list[tuple[str, float | None]] = []
        self.asked: list[float] = []

    def finished_before(self, time):
        self.asked.append(float(time))
        return super().finished_before(time)

    def load(self, job_id, time=None):
        self.loaded.append((str(job_id), time))
        return super().load(job_id, time)


# the features as a dataset kind's (aggregation as LAST says), for tests that register a kind
FEATURES_KIND = tuple(Feature(c, c, "last" if last else "mean") for c, last in zip(FEATURES, LAST))


def register_test_kind(monkeypatch) -> None:
    """Make "test" a dataset kind with these features and no machine state."""
    from stragglers.formats import datasets

    monkeypatch.setitem(datasets.FEATURES_BY_KIND, "test", FEATURES_KIND)
    monkeypatch.setitem(datasets.MACHINE_STATE_BY_KIND, "test", ())
