"""The paper protocol's flag-all rates: which scored tasks ever reach a checkpoint.

Under `protocol: paper` (docs/protocols.md, rules 1, 5, 6 and 8) a task is predicted only at
the checkpoints k = 2 .. K - 2 at which it has a k-th window (windows counted from 0 on its own
aligned timeline; K is the longest straggler's window count). A scored task that never runs at
one of them is never flagged, and counts as a negative. A method that flags every running task
at every checkpoint therefore scores TPR = the share of the scored stragglers that reach a
checkpoint and FPR = the share of the scored non-stragglers that do. These flag-all rates
depend on the jobs' window counts alone. They bound every method's TPR and FPR under the
protocol, and they are the rates of a detector that calls every running row an outlier, as
the detectors fitted on finished rows do when a running row's features are a shrunken
partial sum (rule 2; docs/calibration.md, "What the detector rows measure").

The window counts come from task_events (first SCHEDULE to last FINISH, cut on the trace's
300 s grid from 600 s, as the usage windows are), so real and generated traces are measured
the same way:

    python -m stragglers.replay.reach \\
        ../shared/data/google-2011/task_events/part-00000-of-00500.csv.gz \\
        resources/raw/google-synthetic
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from stragglers.formats.dataset_spec import MIN_TASKS
from stragglers.formats.protocols import resolve_rules
from stragglers.formats.raw import GOOGLE_TRACE_START_US, GOOGLE_WINDOW_US
from stragglers.replay import aligned
from stragglers.traces.calibrate import read_task_events, task_latencies

PAPER_RULES = resolve_rules("paper")

REACH_COLUMNS = (
    "job_id",
    "n_tasks",
    "n_checkpoints",
    "stragglers_scored",
    "stragglers_reaching",
    "others_scored",
    "others_reaching",
    "flag_all_TPR",
    "flag_all_FPR",
    "median_windows",
)


def job_reach(
    latency: np.ndarray,
    n_windows: np.ndarray,
    straggler_quantile: float = 0.9,
    start_fraction: float = 0.04,
) -> dict[str, float]:
    """One job's scored tasks and how many of them run at a checkpoint, by the paper
    protocol's rules (threshold at the sorted index, pruning, the shortest tasks finished
    from the start, checkpoints 2 .. K - 2)."""
    latency = np.asarray(latency, dtype=float)
    n_windows = np.asarray(n_windows, dtype=np.int64)
    tasks = aligned.scored_tasks(
        latency, n_windows, PAPER_RULES, straggler_quantile, start_fraction
    )
    stragglers, scored = tasks.stragglers, tasks.in_play
    checkpoints = aligned.checkpoint_range(n_windows, stragglers)
    has_result = len(checkpoints) > 0  # else the job has no result (rule 8): no rates
    reaching = scored & (n_windows > checkpoints.start) & has_result
    counts = {
        "stragglers_scored": int((scored & stragglers).sum()),
        "stragglers_reaching": int((reaching & stragglers).sum()),
        "others_scored": int((scored & ~stragglers).sum()),
        "others_reaching": int((reaching & ~stragglers).sum()),
    }
    return {
        "n_tasks": len(latency),
        "n_checkpoints": len(checkpoints),
        **counts,
        "flag_all_TPR": _share(
            counts["stragglers_reaching"], counts["stragglers_scored"], has_result
        ),
        "flag_all_FPR": _share(counts["others_reaching"], counts["others_scored"], has_result),
        "median_windows": float(np.median(n_windows)),
    }


def _share(part: int, whole: int, has_result: bool) -> float:
    """part / whole; NaN for a job without a result or without such scored tasks."""
    return part / whole if has_result and whole else float("nan")


def window_counts(first_schedule_us: np.ndarray, final_finish_us: np.ndarray) -> np.ndarray:
    """How many 300 s grid windows (from 600 s) a task's run [start, end) touches."""
    first = (np.asarray(first_schedule_us) - GOOGLE_TRACE_START_US) // GOOGLE_WINDOW_US
    last = (np.asarray(final_finish_us) - 1 - GOOGLE_TRACE_START_US) // GOOGLE_WINDOW_US
    return (last - first + 1).astype(np.int64)


def reach_table(
    events: pd.DataFrame,
    min_tasks: int = MIN_TASKS,
    straggler_quantile: float = 0.9,
    start_fraction: float = 0.04,
) -> pd.DataFrame:
    """One row per job with at least `min_tasks` finished tasks (REACH_COLUMNS)."""
    tasks = task_latencies(events)
    tasks["n_windows"] = window_counts(tasks["first_schedule"], tasks["final_finish"])
    rows = []
    for job_id, group in tasks.groupby("job_id", sort=True):
        if len(group) < min_tasks:
            continue
        reach = job_reach(
            group["latency"].to_numpy(float),
            group["n_windows"].to_numpy(),
            straggler_quantile,
            start_fraction,
        )
        rows.append({"job_id": int(job_id), **reach})
    return pd.DataFrame(rows, columns=list(REACH_COLUMNS))


def reach_summary(table: pd.DataFrame) -> dict[str, float]:
    """The share of jobs with a scored checkpoint, and the flag-all rates' means over those
    jobs (Table 3 averages over the jobs that have a result). The jobs' median window counts
    are given over all jobs and over those with a result: the flag-all rates fall only where
    the scored jobs' tasks are near the three windows a task needs to reach k = 2."""
    scored = table["n_checkpoints"] > 0
    return {
        "jobs": float(len(table)),
        "jobs with a scored checkpoint": float(scored.mean()),
        "flag-all TPR (mean over those jobs)": float(table["flag_all_TPR"].mean()),
        "flag-all FPR (mean over those jobs)": float(table["flag_all_FPR"].mean()),
        "median windows per task (median over jobs)": float(table["median_windows"].median()),
        "median windows per task (median over the jobs with a result)": float(
            table.loc[scored, "median_windows"].median()
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", help="task_events part files or trace folders")
    parser.add_argument(
        "--priorities",
        default=None,
        help="comma-separated priorities of the jobs kept (default: all)",
    )
    parser.add_argument("--min-tasks", type=int, default=MIN_TASKS)
    parser.add_argument("--out", default=None, help="CSV of every job's row")
    args = parser.parse_args(argv)
    priorities = None if args.priorities is None else [int(p) for p in args.priorities.split(",")]
    summaries, tables = {}, []
    for trace in args.traces:
        table = reach_table(read_task_events(trace, priorities), args.min_tasks)
        if table.empty:
            print(f"{trace}: no job with {args.min_tasks} finished tasks", file=sys.stderr)
            return 1
        summaries[trace] = reach_summary(table)
        tables.append(table.assign(trace=trace))
    print(pd.DataFrame(summaries).round(3).to_string())
    if args.out:
        pd.concat(tables, ignore_index=True).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
