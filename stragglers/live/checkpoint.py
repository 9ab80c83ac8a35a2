"""A stage's checkpoint at a poll, built from the recording so far by the rules the task-table
conversion and the replay apply to the finished recording (stragglers/convert/tasks_table.py,
stragglers/replay/wallclock.py), so that the method sees at the poll what the replay of the
recording shows it at that time:

- a task is its attempts; it starts with its first and finishes with its earliest finished
  one (latency: first start to that end); tasks are in the order (start, first seen);
- a window counts when it lies inside its task's life (a speculative copy's window after the
  task finished does not) and is available by the poll;
- features, in the conversion's order: `request_locality` of the window's attempt, the usage
  rates (live/spark.py MEASURES), `evictions_so_far` (0: Spark has none) and
  `failures_so_far` (the task's failed attempts ended by the window's availability and by the
  task's finish); a task's features are the duration-weighted means of its windows (the
  counts: the latest), missing values filled by formats.features.fill_missing.

The positions handed to the method are those of the finished recording: a task not started
by the poll starts after every task that has, so the tasks started by then come first.
"""

from __future__ import annotations

import numpy as np

from stragglers.formats.datasets import EVICTIONS_SO_FAR, FAILURES_SO_FAR
from stragglers.formats.features import FeatureAccumulator, fill_missing
from stragglers.formats.jobs import Job
from stragglers.live.recording import Attempt, Window
from stragglers.live.spark import MEASURES

FEATURES = ("request_locality", *MEASURES, EVICTIONS_SO_FAR, FAILURES_SO_FAR)
LAST = np.array([name in (EVICTIONS_SO_FAR, FAILURES_SO_FAR) for name in FEATURES])


class StageView:
    """One stage attempt at time t: the tasks started by t, their windows available by t."""

    def __init__(self, job_id: str, attempts: list[Attempt], windows: list[Window], t: float):
        by_task: dict[int, list[Attempt]] = {}
        for attempt in sorted(attempts, key=lambda a: a.row):
            by_task.setdefault(attempt.task, []).append(attempt)
        rows = []
        for task, own in by_task.items():
            start = min(a.start for a in own)
            finished = sorted(
                (a for a in own if a.status == "finished"), key=lambda a: (a.end, a.row)
            )
            end = finished[0].end if finished else np.inf
            rows.append((start, own[0].row, task, end))
        rows = [r for r in rows if r[0] <= t]
        rows.sort(key=lambda r: (r[0], r[1]))
        self.job_id = job_id
        # each task's original attempt: the lowest number (a retry or a copy comes after)
        self.original = {task: min(a.attempt for a in own) for task, own in by_task.items()}
        self.task_ids = np.array([r[2] for r in rows], dtype=np.int64)
        self.task_start = np.array([r[0] for r in rows], dtype=np.float64)
        self.task_end = np.array([r[3] for r in rows], dtype=np.float64)
        position = {task: k for k, task in enumerate(self.task_ids.tolist())}
        self.position = position
        # failed attempts' ends, per task, counted up to the task's finish
        failed: dict[int, list[float]] = {}
        for task, own in by_task.items():
            if task in position:
                finish = self.task_end[position[task]]
                failed[task] = sorted(
                    a.end for a in own if a.status == "failed" and a.end <= finish
                )
        locality = {(a.task, a.attempt): a.locality for a in attempts}
        kept = [
            w
            for w in windows
            if w.task in position
            and w.available <= t
            and w.start >= self.task_start[position[w.task]]
            and w.end <= self.task_end[position[w.task]]
        ]
        kept.sort(key=lambda w: (w.available, position[w.task], w.start))
        n = len(kept)
        values = np.zeros((n, len(FEATURES)))
        for i, w in enumerate(kept):
            values[i, 0] = locality[(w.task, w.attempt)]
            values[i, 1 : 1 + len(MEASURES)] = w.values
            values[i, -1] = np.searchsorted(failed[w.task], w.available, side="right")
        self.job = Job(
            job_id=job_id,
            feature_names=list(FEATURES),
            window_task=np.array([position[w.task] for w in kept], dtype=np.int64),
            window_start=np.array([w.start for w in kept], dtype=np.float64),
            window_end=np.array([w.end for w in kept], dtype=np.float64),
            available_from=np.array([w.available for w in kept], dtype=np.float64),
            window_features=values,
            task_id=self.task_ids.astype(str),
            task_start=self.task_start,
            task_end=self.task_end,
            latency=self.task_end - self.task_start,
            machine_id=np.array([""] * len(rows)),
            evictions=np.zeros(len(rows), dtype=np.int64),
            failures=np.zeros(len(rows), dtype=np.int64),
        )
        self.t = t

    def candidates(self, flagged: np.ndarray):
        """(finished, running, accumulator) at t: finished tasks (end <= t), and the running
        ones not flagged yet with at least one window (the replay's rule)."""
        job, t = self.job, self.t
        accumulator = FeatureAccumulator(job, LAST)
        accumulator.advance(t)
        finished = np.flatnonzero(job.task_end <= t)
        running = np.flatnonzero(
            (job.task_start <= t) & (job.task_end > t) & ~flagged & (accumulator.n_windows > 0)
        )
        return finished, running, accumulator

    def arrays(self, finished, running, accumulator):
        """The Checkpoint's arrays: features (missing filled), finished latencies, elapsed."""
        finished_features, running_features = fill_missing(
            accumulator.features(finished), accumulator.features(running)
        )
        return (
            finished_features,
            self.job.latency[finished],
            running_features,
            self.t - self.job.task_start[running],
        )
