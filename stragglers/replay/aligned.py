"""The reference script's aligned timeline (`replay.overrides.timeline: aligned`): every task
starts at 0 and checkpoint k is each task's k-th usage window. Its rules (latency as the sum of
window durations, the features at window k, final scaling, the threshold and the initial
finished set, which checkpoints run, the flag time (k + 1) x interval, long windows cut into
pieces), each a small function tested by hand, are listed in docs/protocols.md
("`replay.protocol: paper`, rule by rule").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from stragglers.formats.jobs import Job
from stragglers.formats.protocols import ProtocolRules
from stragglers.replay.core import pruned_tasks, straggler_threshold

FIRST_CHECKPOINT = 2  # the reference script's first k


@dataclass
class AlignedView:
    """A job's windows re-timed from each task's own start, one row per (task, window index)."""

    n_windows: np.ndarray  # (n,) windows per task
    offset: np.ndarray  # (n,) first row of each task
    latency: np.ndarray  # (n,) seconds: sum of the task's window durations
    elapsed: np.ndarray  # (rows,) seconds from the task's start to the end of the window
    cumulative: np.ndarray  # (rows, d) features at each window under the feature rule

    def rows(self, tasks: np.ndarray, k: int) -> np.ndarray:
        return self.offset[tasks] + k

    def final(self) -> np.ndarray:
        return self.cumulative[self.offset + self.n_windows - 1]


def split_windows(
    task: np.ndarray, duration: np.ndarray, values: np.ndarray, piece: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut windows longer than `piece` seconds into pieces of `piece` (the last shorter)."""
    count = np.maximum(1, np.ceil(duration / piece - 1e-9)).astype(np.int64)
    if np.all(count == 1):
        return task, duration, values
    index = np.repeat(np.arange(len(duration)), count)
    position = np.arange(len(index)) - np.repeat(np.cumsum(count) - count, count)
    pieces = np.minimum(piece, duration[index] - position * piece)
    return task[index], pieces, values[index]


def per_window_counts(task: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running counts (evictions / failures so far, rows sorted by task then time) turned into
    the count within each window: the authors' preprocessing writes, per usage window, the
    events since the previous window's end (data/timeseriestotal.py), not the total so far."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return values
    previous = np.vstack([np.zeros((1, values.shape[1])), values[:-1]])
    first = np.r_[True, task[1:] != task[:-1]]
    previous[first] = 0.0
    return values - previous


def build_view(job: Job, last_columns: np.ndarray, features: str, piece: float) -> AlignedView:
    """The aligned windows of `job` and the cumulative features of rule 2. Under
    `divided_by_final` the running-count (`last`) columns enter as per-window counts, as in
    the reference script's input (per_window_counts)."""
    order = np.lexsort((job.window_start, job.window_task))
    window_values = job.window_features[order]
    last = np.flatnonzero(np.asarray(last_columns, dtype=bool))
    if features == "divided_by_final" and len(last):
        window_values = window_values.copy()
        window_values[:, last] = per_window_counts(job.window_task[order], window_values[:, last])
    task, duration, values = split_windows(
        job.window_task[order],
        (job.window_end - job.window_start)[order],
        window_values,
        piece,
    )
    n = job.n_tasks
    n_windows = np.bincount(task, minlength=n)
    if np.any(n_windows == 0):
        raise ValueError(f"job {job.job_id}: task {int(np.argmin(n_windows))} has no window")
    offset = np.cumsum(n_windows) - n_windows
    latency = np.bincount(task, weights=duration, minlength=n)
    present = ~np.isnan(values)
    weighted = np.where(present, values, 0.0) * duration[:, None]
    group = pd.Series(task)
    elapsed = pd.Series(duration).groupby(group).cumsum().to_numpy()
    if features == "divided_by_final":
        cumulative = pd.DataFrame(weighted / latency[task, None]).groupby(group).cumsum().to_numpy()
    elif features == "mean_so_far":
        numerator = pd.DataFrame(weighted).groupby(group).cumsum().to_numpy()
        weight = pd.DataFrame(present * duration[:, None]).groupby(group).cumsum().to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            cumulative = numerator / weight
        last = np.flatnonzero(np.asarray(last_columns, dtype=bool))
        if len(last):
            cumulative[:, last] = pd.DataFrame(values[:, last]).groupby(group).ffill().to_numpy()
    else:
        raise ValueError(f"replay.overrides.features: unknown rule {features!r}")
    return AlignedView(n_windows, offset, latency, elapsed, cumulative)


def script_column_order(feature_names) -> np.ndarray:
    """Positions of `feature_names` in the reference script's column order (MCU, CMU, AMU,
    UPC, TPC, MAXMU, MIO, MDK, MAXCPU, MAXIO, CPI, MAI, SCPU, EV, FL; datasets.SCRIPT_COLUMNS);
    a feature set the script's layout does not hold (google-2011-events) keeps its order. Its
    GradientBoostingRegressor breaks near-tied splits by column position, so the order
    matters for the `regressor: sklearn_gbr` rule."""
    from stragglers.formats.datasets import SCRIPT_COLUMNS, SCRIPT_ORDER

    names = list(feature_names)
    if not all(name in SCRIPT_COLUMNS for name in names):
        return np.arange(len(names), dtype=np.int64)
    return np.argsort([SCRIPT_ORDER.index(SCRIPT_COLUMNS[name]) for name in names], kind="stable")


def sorted_index_value(latency: np.ndarray, fraction: float) -> float:
    """The sorted latencies at index int(fraction * n) (the reference script's cut-offs)."""
    latency = np.sort(np.asarray(latency, dtype=float))
    return float(latency[min(int(fraction * len(latency)), len(latency) - 1)])


def initial_split(latency: np.ndarray, start_fraction: float) -> np.ndarray:
    """Rule 4: the tasks known finished from the start (latency below the int(sf*n) cut)."""
    return np.asarray(latency) < sorted_index_value(latency, start_fraction)


@dataclass(frozen=True)
class ScoredTasks:
    """Which of a job's tasks the aligned replay asks about and scores: the threshold and the
    stragglers (rule 4), the tasks pruned from scoring (rule 5), the initial finished set
    (rule 4) and the first checkpoint at which a finished task joins the finished set."""

    threshold: float
    stragglers: np.ndarray
    excluded: np.ndarray
    initial: np.ndarray
    join_from: int

    @property
    def in_play(self) -> np.ndarray:
        """The tasks that run and are scored."""
        return ~self.excluded & ~self.initial


def scored_tasks(
    latency: np.ndarray,
    n_windows: np.ndarray,
    rules: ProtocolRules,
    straggler_quantile: float,
    start_fraction: float,
) -> ScoredTasks:
    """The job's ScoredTasks under `rules` (the replay and the flag-all rates of
    stragglers/replay/reach.py share this one definition)."""
    threshold = straggler_threshold(latency, straggler_quantile, rules.threshold)
    n = len(latency)
    excluded = np.zeros(n, dtype=bool)
    if rules.prune_scored:
        excluded = pruned_tasks(latency, n_windows, threshold, start_fraction)
    if rules.initial_finished == "shortest":
        initial = initial_split(latency, start_fraction) & ~excluded
        join_from = FIRST_CHECKPOINT
    else:
        initial = np.zeros(n, dtype=bool)
        join_from = 0
    return ScoredTasks(
        threshold=threshold,
        stragglers=latency >= threshold,
        excluded=excluded,
        initial=initial,
        join_from=join_from,
    )


@dataclass(frozen=True)
class FinalScale:
    """Rule 3: min-max scaling with all tasks' final values; constant columns dropped."""

    low: np.ndarray
    span: np.ndarray
    keep: np.ndarray  # bool per feature column
    latency_low: float
    latency_span: float

    def features(self, block: np.ndarray) -> np.ndarray:
        return ((block - self.low) / self.span)[:, self.keep]

    def latency(self, seconds: np.ndarray | float) -> np.ndarray | float:
        return (seconds - self.latency_low) / self.latency_span


def final_scale(final_features: np.ndarray, latency: np.ndarray) -> FinalScale:
    with np.errstate(invalid="ignore"):
        low = np.nanmin(np.where(np.isnan(final_features), np.inf, final_features), axis=0)
        high = np.nanmax(np.where(np.isnan(final_features), -np.inf, final_features), axis=0)
    span = high - low
    # constant up to rounding counts as constant: a request value averaged with weights
    # duration / latency differs between tasks only in the last bits, and scaling by that
    # span would blow running rows up to ~1e15
    magnitude = np.maximum(np.abs(low), np.abs(high))
    keep = np.isfinite(span) & (span > 1e-9 * np.where(np.isfinite(magnitude), magnitude, 0.0))
    latency = np.asarray(latency, dtype=float)
    latency_span = float(latency.max() - latency.min())
    return FinalScale(
        low=np.where(keep, low, 0.0),
        span=np.where(keep, span, 1.0),
        keep=keep,
        latency_low=float(latency.min()),
        latency_span=latency_span if latency_span > 0 else 1.0,
    )


def last_checkpoint(n_windows: np.ndarray, stragglers: np.ndarray) -> int:
    """K: the longest straggler's window count (before pruning)."""
    return int(n_windows[stragglers].max()) if stragglers.any() else 0


def checkpoint_range(n_windows: np.ndarray, stragglers: np.ndarray) -> range:
    """k = 2 .. K - 2: the checkpoints whose flags are scored (rule 6 and 8)."""
    return range(FIRST_CHECKPOINT, last_checkpoint(n_windows, stragglers) - 1)


def finished_at(
    k: int, n_windows: np.ndarray, initial: np.ndarray, in_play: np.ndarray, join_from: int
) -> np.ndarray:
    """Finished set at checkpoint k: the initial set, plus every task in play whose last
    window came before k, at or after checkpoint `join_from` (a task only joins after a
    checkpoint at which it ran: the script never adds a task that ended before k = 2)."""
    last = n_windows - 1
    return initial | (in_play & (last < k) & (last >= join_from))


def script_row_order(
    order: list[int],
    finished: np.ndarray,
    stragglers: np.ndarray,
    latency: np.ndarray,
    threshold: float,
    start_fraction: float,
) -> list[int]:
    """The finished set in the reference script's row order, extending `order` (the rows so
    far) in place: its initial training rows come out of `list(set(...) - set(...))` (CPython's
    set order, rebuilt here from the same int lists), and the tasks that finish at a
    checkpoint are appended stragglers first, each group by task position. Its scikit-learn
    GBR sums split gains in row order, so near-tied splits can depend on it."""
    seen = set(order)
    newcomers = [int(t) for t in finished if int(t) not in seen]
    if not order:
        non_stragglers = np.flatnonzero(latency < threshold).tolist()
        cut = sorted_index_value(latency, start_fraction)
        gap = np.flatnonzero((latency >= cut) & (latency < threshold)).tolist()
        initial = list(set(non_stragglers) - set(gap))
        wanted = set(newcomers)
        first = [t for t in initial if t in wanted]
        newcomers = first + sorted(wanted - set(first), key=lambda t: (not stragglers[t], t))
    else:
        newcomers.sort(key=lambda t: (not stragglers[t], t))
    order.extend(newcomers)
    return order


def flag_time(k: int, interval: float) -> float:
    """Aligned time of a flag at checkpoint k: the end of a full k-th window."""
    return float((k + 1) * interval)


def simulation_flags(flag_times: np.ndarray, latency: np.ndarray) -> np.ndarray:
    """Flags the aligned-timeline simulation acts on: a task whose life [0, latency) ended by
    its flag's time has finished and is not relaunched (NaN)."""
    flag_times = np.asarray(flag_times, dtype=float)
    return np.where(flag_times < np.asarray(latency, dtype=float), flag_times, np.nan)
