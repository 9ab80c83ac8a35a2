"""One row per task of every converted job, as a launch-time model sees it when the task is
placed: its job, its node, its workload (a manifest attribute chosen by the `workload`
setting) and its machine's state just before it started (`launch_machine_*`); plus, for
scoring only, its latency and label (`p90`, Table 3's, or Wrangler's Definition 1). Labels and
workloads: docs/methods.md ("Launch-time, cross-job protocol").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from stragglers.formats.datasets import machine_state_columns
from stragglers.formats.jobs import launch_columns, read_converted, read_manifest

LABELS = ("p90", "wrangler")
# per-job attributes the conversion writes to the manifest (workload_<name>)
WORKLOADS_BY_KIND = {
    "google-2011": ("user", "scheduling_class"),
    "google-2011-events": ("user", "scheduling_class"),
    "alibaba-2018": ("task_type", "task_family"),
    "alibaba-2017": ("task_family",),
}
ROW_COLUMNS = [
    "job_id",
    "task",
    "task_start",
    "task_end",
    "latency",
    "job_start",
    "job_end",
    "node",
    "workload",
]


def launch_feature_columns(kind: str) -> list[str]:
    return launch_columns(machine_state_columns(kind))


def check_workload(kind: str, workload: str) -> None:
    known = WORKLOADS_BY_KIND.get(kind, ())
    if workload not in known:
        raise ValueError(
            f"launch.workload: {workload!r} is not a workload of dataset kind {kind!r}; "
            f"known: {list(known)}"
        )


def check_label(label: str) -> None:
    if label not in LABELS:
        raise ValueError(f"launch.label: {label!r} is not one of {list(LABELS)}")


def job_threshold(
    latency: np.ndarray, label: str, quantile: float = 0.9, beta: float = 1.3
) -> float:
    """The latency at or above which a task of this job is a straggler under `label`."""
    check_label(label)
    latency = np.asarray(latency, dtype=float)
    if label == "p90":
        return float(np.quantile(latency, quantile))  # as the replay's straggler_threshold
    # Definition 1 is strict (nd > beta x median): the next float above is the threshold
    return float(np.nextafter(beta * np.median(latency), np.inf))


def straggler_labels(
    latency: np.ndarray, job: np.ndarray, label: str, quantile: float = 0.9, beta: float = 1.3
) -> np.ndarray:
    """Per-task labels from each job's own latencies (`job`: a job code per task)."""
    check_label(label)
    frame = pd.DataFrame({"job": job, "latency": np.asarray(latency, dtype=float)})
    if frame.empty:
        return np.zeros(0, dtype=bool)
    threshold = frame.groupby("job")["latency"].transform(
        lambda values: job_threshold(values.to_numpy(), label, quantile, beta)
    )
    return (frame["latency"] >= threshold).to_numpy()


def load_launch_tasks(
    converted_dir: Path | str, kind: str, workload: str
) -> tuple[pd.DataFrame, list[str]]:
    """Every task of every converted job, sorted by (task_start, job_id, task), with its
    launch features; returns (rows, feature columns)."""
    check_workload(kind, workload)
    converted_dir = Path(converted_dir)
    manifest = read_manifest(converted_dir)
    column = f"workload_{workload}"
    if column not in manifest:
        raise ValueError(
            f"{converted_dir / 'manifest.parquet'}: no column {column!r} (launch.workload: "
            f"{workload!r}); it was converted before workloads were recorded: delete "
            f"{converted_dir} and rerun"
        )
    features = launch_feature_columns(kind)
    if not features:
        raise ValueError(f"dataset kind {kind!r} has no machine state: no launch-time features")
    frames = []
    for row in manifest.itertuples():
        path = converted_dir / row.path
        wanted = ["task", "task_start", "task_end", "latency", "machine_id", *features]
        frame = read_converted(path, wanted)
        frame = frame.drop_duplicates("task")
        frame["job_id"] = str(row.job_id)
        frame["job_start"] = float(row.job_start)
        frame["job_end"] = float(row.job_end)
        frame["workload"] = str(getattr(row, column))
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=ROW_COLUMNS + features), features
    tasks = pd.concat(frames, ignore_index=True).rename(columns={"machine_id": "node"})
    tasks["node"] = tasks["node"].astype(str)
    tasks = tasks.sort_values(["task_start", "job_id", "task"], kind="stable", ignore_index=True)
    return tasks[ROW_COLUMNS + features], features
