"""Features of a converted job as a method sees them at a checkpoint: running sums of the
windows available by then, and missing values filled from the rows available now.
"""

from __future__ import annotations

import math

import numpy as np

from stragglers.formats.jobs import Job


def prediction_start_count(n_tasks: int, start_fraction: float) -> int:
    """Number of finished tasks needed before prediction starts (at least 2 to train on)."""
    return max(2, math.ceil(start_fraction * n_tasks - 1e-9))


class FeatureAccumulator:
    """Running per-task sums of window values, fed in `available_from` order.

    `mean` columns: sum(value * duration) / sum(duration) over the windows added so far,
    ignoring missing values; `last` columns: value of the latest window added.
    """

    def __init__(
        self,
        job: Job,
        last_columns: np.ndarray,
        divide_by_final_latency: bool = False,
        window_values: np.ndarray | None = None,
    ):
        """`window_values`: another (n_windows, d) block than the job's features (the
        machine state)."""
        values = job.window_features if window_values is None else window_values
        n, d = job.n_tasks, values.shape[1]
        self.job = job
        self.window_values = values
        self.is_last = np.asarray(last_columns, dtype=bool)
        self._last_columns = np.flatnonzero(self.is_last)
        self.weighted_sum = np.zeros((n, d))
        self.weight = np.zeros((n, d))
        self.last_value = np.full((n, d), np.nan)
        self.n_windows = np.zeros(n, dtype=np.int64)
        self.position = 0
        self.divide_by_final_latency = divide_by_final_latency
        durations = job.window_end - job.window_start
        present = ~np.isnan(values)
        self._weighted_values = np.where(present, values, 0.0) * durations[:, None]
        self._weights = present * durations[:, None]

    def advance(self, t: float) -> None:
        """Add every window with available_from <= t (windows are sorted by it)."""
        job = self.job
        stop = int(np.searchsorted(job.available_from, t, side="right"))
        if stop <= self.position:
            return
        sl = slice(self.position, stop)
        tasks = job.window_task[sl]
        self._add_windows(tasks, sl)
        # windows are sorted by available_from, so the last write per task is its latest window
        values = self.window_values[sl]
        for column in self._last_columns:
            present = ~np.isnan(values[:, column])
            self.last_value[tasks[present], column] = values[present, column]
        self.position = stop

    def _add_windows(self, tasks: np.ndarray, windows: slice) -> None:
        """Add the `windows` (rows of `tasks`) to the running sums, in row order."""
        if len(tasks) == 1 or bool(np.all(tasks[1:] > tasks[:-1])):
            # each task once (the usual step: windows of one available_from, by task): an
            # indexed += adds each value once to its task, as np.add.at does, at less cost
            self.weighted_sum[tasks] += self._weighted_values[windows]
            self.weight[tasks] += self._weights[windows]
            self.n_windows[tasks] += 1
        else:  # a task twice: np.add.at adds its windows one after the other, in order
            np.add.at(self.weighted_sum, tasks, self._weighted_values[windows])
            np.add.at(self.weight, tasks, self._weights[windows])
            np.add.at(self.n_windows, tasks, 1)

    def features(self, tasks: np.ndarray) -> np.ndarray:
        if self.divide_by_final_latency:
            # reference code: sum(duration_w * value_w) / final latency, a leak by design
            out = self.weighted_sum[tasks] / self.job.latency[tasks, None]
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                out = self.weighted_sum[tasks] / self.weight[tasks]
            if len(self._last_columns):
                out[:, self._last_columns] = self.last_value[tasks][:, self._last_columns]
        return out


def fill_missing(*blocks: np.ndarray) -> list[np.ndarray]:
    """Replace NaN by the column mean of the rows available now (0 if none)."""
    stacked = np.vstack(blocks) if blocks else np.empty((0, 0))
    missing = np.isnan(stacked)
    if not missing.any():
        # nothing to fill: the means are never read (np.where below still copies each block,
        # so the blocks come out as new arrays of the same layout either way)
        means = np.zeros(stacked.shape[1])
    else:
        with np.errstate(invalid="ignore"):
            means = np.nanmean(stacked, axis=0) if len(stacked) else np.zeros(stacked.shape[1])
        means = np.where(np.isnan(means), 0.0, means)
    return [np.where(np.isnan(b), means, b) for b in blocks]
