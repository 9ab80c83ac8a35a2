"""Latency-shape statistics of Google task_events, to compare generated traces with real ones.

For every job with at least `min_tasks` finished tasks (task latency = final FINISH time -
first SCHEDULE time), the per-job statistics are p90/median, max/p90, whether p90 > max/2
(the right side of the paper's Figure 1) and the fraction of its finished tasks that had an
EVICT or FAIL. Their distribution across jobs is summarised by quantiles.

    python -m stragglers.traces.calibrate \
        --real ../shared/data/google-2011/task_events/part-00000-of-00500.csv.gz \
        --generated results/generated/google-2011
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from stragglers.formats.dataset_spec import MIN_TASKS
from stragglers.formats.raw import GOOGLE_TASK_EVENTS, EventType

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
_USED_COLUMNS = ["timestamp", "job_id", "task_index", "event_type"]


def part_files(path: str | Path, table: str = "task_events") -> list[Path]:
    """The part files of a Google table behind `path`: a file, the table's folder, or a trace
    folder holding it."""
    path = Path(path)
    if path.is_file():
        return [path]
    if (path / table).is_dir():
        path = path / table
    files = sorted(path.glob("part-*.csv.gz")) if path.is_dir() else []
    if not files:
        raise FileNotFoundError(f"no {table} part files (part-*.csv.gz) under {path}")
    return files


def task_event_files(path: str | Path) -> list[Path]:
    """The task_events part files behind `path` (`part_files`)."""
    return part_files(path, "task_events")


def read_task_events(path: str | Path, priorities: Sequence[int] | None = None) -> pd.DataFrame:
    """Task events (timestamp, job_id, task_index, event_type) of one file or all parts; with
    `priorities`, only the jobs that have an event with one of them (the paper keeps
    production jobs)."""
    used = _USED_COLUMNS + ([] if priorities is None else ["priority"])
    frames = []
    for file in task_event_files(path):
        frame = pd.read_csv(
            file,
            header=None,
            names=GOOGLE_TASK_EVENTS,
            usecols=used,
            dtype={c: np.int64 for c in _USED_COLUMNS},
        )
        frames.append(frame)
    events = pd.concat(frames, ignore_index=True)
    if priorities is None:
        return events
    jobs = events.loc[events["priority"].isin(list(priorities)), "job_id"].unique()
    return events[events["job_id"].isin(jobs)].drop(columns="priority")


def task_latencies(events: pd.DataFrame) -> pd.DataFrame:
    """One row per task that was scheduled and then finished.

    Columns: job_id, task_index, first_schedule, final_finish (µs), latency (s) and
    interrupted (the task has an EVICT or FAIL event).
    """
    keys = ["job_id", "task_index"]
    event = events["event_type"]
    schedule = events[event == EventType.SCHEDULE].groupby(keys)["timestamp"].min()
    finish = events[event == EventType.FINISH].groupby(keys)["timestamp"].max()
    interrupted = (
        events[event.isin([EventType.EVICT, EventType.FAIL])].groupby(keys).size().rename("n")
    )
    tasks = pd.concat([schedule.rename("first_schedule"), finish.rename("final_finish")], axis=1)
    tasks = tasks.dropna()
    tasks = tasks[tasks["final_finish"] > tasks["first_schedule"]].astype(np.int64)
    tasks["latency"] = (tasks["final_finish"] - tasks["first_schedule"]) / 1e6
    tasks["interrupted"] = tasks.index.isin(interrupted.index)
    return tasks.reset_index()


def job_latency_shape(latencies: pd.DataFrame, min_tasks: int = MIN_TASKS) -> pd.DataFrame:
    """Per-job latency-shape statistics for jobs with >= min_tasks finished tasks.

    Quantiles use numpy's default (linear interpolation).
    """
    rows = []
    for job_id, group in latencies.groupby("job_id", sort=True):
        if len(group) < min_tasks:
            continue
        latency = group["latency"].to_numpy(np.float64)
        median, p90 = np.quantile(latency, [0.5, 0.9])
        longest = latency.max()
        rows.append(
            {
                "job_id": job_id,
                "n_tasks": len(latency),
                "median_s": median,
                "p90_s": p90,
                "max_s": longest,
                "p90_over_median": p90 / median,
                "max_over_p90": longest / p90,
                "p90_above_half_max": bool(p90 > longest / 2),
                "interrupted_fraction": float(group["interrupted"].mean()),
                "n_interrupted": int(group["interrupted"].sum()),
            }
        )
    columns = [
        "job_id",
        "n_tasks",
        "median_s",
        "p90_s",
        "max_s",
        "p90_over_median",
        "max_over_p90",
        "p90_above_half_max",
        "interrupted_fraction",
        "n_interrupted",
    ]
    return pd.DataFrame(rows, columns=columns)


def shape_summary(jobs: pd.DataFrame, quantiles: Iterable[float] = QUANTILES) -> dict[str, float]:
    """Distribution across jobs of the per-job statistics, as a flat dict."""
    quantiles = list(quantiles)
    out: dict[str, float] = {"jobs": float(len(jobs)), "tasks": float(jobs["n_tasks"].sum())}
    if len(jobs) == 0:
        return out
    for column in ("p90_over_median", "max_over_p90", "median_s"):
        values = np.quantile(jobs[column].to_numpy(np.float64), quantiles)
        for q, v in zip(quantiles, values):
            out[f"{column} q{round(q * 100):02d}"] = float(v)
    out["fraction of jobs with p90 > max/2"] = float(jobs["p90_above_half_max"].mean())
    out["fraction of tasks with EVICT/FAIL (pooled)"] = float(
        jobs["n_interrupted"].sum() / jobs["n_tasks"].sum()
    )
    out["fraction of tasks with EVICT/FAIL (mean over jobs)"] = float(
        jobs["interrupted_fraction"].mean()
    )
    out["fraction of jobs with any EVICT/FAIL"] = float((jobs["n_interrupted"] > 0).mean())
    return out


def summarize_events(events: pd.DataFrame, min_tasks: int = MIN_TASKS) -> dict[str, float]:
    """The latency-shape summary of task events already read (read_task_events)."""
    return shape_summary(job_latency_shape(task_latencies(events), min_tasks))


def summarize_trace(path: str | Path, min_tasks: int = MIN_TASKS) -> dict[str, float]:
    return summarize_events(read_task_events(path), min_tasks)


def comparison_table(columns: dict[str, dict[str, float]]) -> pd.DataFrame:
    """Statistics as rows, one column per named summary."""
    return pd.DataFrame(columns)


def markdown_table(table: pd.DataFrame, digits: int = 3) -> str:
    header = "| statistic | " + " | ".join(table.columns) + " |"
    rule = "|---|" + "---:|" * len(table.columns)
    lines = [header, rule]
    for name, row in table.iterrows():
        cells = []
        for v in row:
            if pd.isna(v):
                cells.append("")
            elif float(v).is_integer() and abs(v) >= 1:
                cells.append(f"{int(v)}")
            else:
                cells.append(f"{v:.{digits}f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stragglers.traces.calibrate",
        description="Per-job latency-shape statistics of real and generated Google task_events.",
    )
    parser.add_argument(
        "--real", action="append", default=[], help="real task_events part file or folder"
    )
    parser.add_argument(
        "--generated",
        action="append",
        default=[],
        help="generated trace folder (or its task_events folder or one part file)",
    )
    parser.add_argument(
        "--min-tasks",
        type=int,
        default=MIN_TASKS,
        help="finished tasks a job needs (default %(default)s)",
    )
    parser.add_argument("--digits", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.real and not args.generated:
        parser.error("give at least one --real or --generated path")
    columns: dict[str, dict[str, float]] = {}
    for label, paths in (("real", args.real), ("generated", args.generated)):
        for i, path in enumerate(paths):
            name = label if len(paths) == 1 else f"{label} {i + 1}"
            try:
                columns[name] = summarize_trace(path, args.min_tasks)
            except (FileNotFoundError, ValueError) as err:
                print(f"error reading {path}: {err}", file=sys.stderr)
                return 2
    print(markdown_table(comparison_table(columns), args.digits))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
