"""LATE (Zaharia et al., OSDI 2008): Hadoop/Spark-style speculative execution, no model.

At every checkpoint, for the running tasks that have not been speculated yet:

    progress_rate = progress / elapsed
    time_left     = (1 - progress) / progress_rate
    slow          = progress_rate < the slow_task_percentile (25th) of the running tasks'
                    progress rates  (LATE's SlowTaskThreshold)

and the slow tasks with the longest time_left are speculated (flagged), at most as many as
the cap leaves free: SpeculativeCap allows floor(speculative_cap * n_tasks) speculative copies
at once (10 % of the job's tasks; at least 1).

Progress comes from `stragglers.methods._progress` (the traces have no progress score):
CPU-seconds so far over the median total CPU-seconds of the finished tasks.

Adaptations (docs/methods.md):

- "At once": a speculated task occupies a slot of the cap from its flag until the original
  task finishes (it leaves `finished_tasks`' complement). The replay does not know when the
  speculative copy would end, so the slot is held as long as the original runs, which
  speculates at most as much as Hadoop would, never more.
- The percentile is taken over the running tasks the checkpoint shows: tasks already
  speculated are not in it (the replay asks only about unflagged tasks).
- Hadoop considers a task for speculation only after it has run `min_elapsed` seconds (60);
  on the trace's checkpoint grid a running task has at least one ended window, so this
  rarely binds.
- A task with progress 0 has rate 0 and infinite time left: it is the first candidate.
- A task whose proxy progress is capped at 1 (it has done the median task's work and still
  runs) has time left 0, and its rate 1 / elapsed falls as it runs: it becomes a candidate
  once that rate is below the percentile, chosen after every task with time left, slowest
  first. Without a progress signal (equal rates: the events-only dataset) this is all LATE
  does: it speculates tasks that have run longer than the median finished latency.
- LATE's SlowNodeThreshold (do not launch copies on slow nodes) is about where a copy runs,
  not which task is speculated; it belongs to the simulator, and is not modelled.
- LATE does not know the straggler threshold tau and does not use it.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from stragglers.methods._progress import estimate_progress
from stragglers.methods.base import Checkpoint, JobInfo, Method, Param
from stragglers.methods.elapsed import SCHEDULERS_FAMILY


def late_selection(
    progress: np.ndarray,
    elapsed: np.ndarray,
    free_slots: int,
    slow_task_percentile: float = 25.0,
    min_elapsed: float = 0.0,
) -> np.ndarray:
    """LATE's choice among running tasks: bool per task, True = speculate now.

    Candidates: elapsed >= min_elapsed and progress rate strictly below the
    `slow_task_percentile` of all running tasks' rates (numpy's linear percentile). Among them
    the `free_slots` with the longest estimated time left are chosen; ties (e.g. tasks whose
    progress is capped at 1, time left 0) go to the lower rate first, then the lower position,
    so the choice is deterministic.
    """
    progress = np.asarray(progress, dtype=np.float64)
    elapsed = np.asarray(elapsed, dtype=np.float64)
    if progress.shape != elapsed.shape:
        raise ValueError(f"progress {progress.shape} and elapsed {elapsed.shape} differ")
    chosen = np.zeros(len(progress), dtype=bool)
    if len(progress) == 0 or free_slots <= 0:
        return chosen
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(elapsed > 0, progress / elapsed, 0.0)
        time_left = np.where(rate > 0, (1.0 - progress) / rate, np.inf)
    threshold = np.percentile(rate, slow_task_percentile)
    candidates = np.flatnonzero((rate < threshold) & (elapsed >= min_elapsed))
    if len(candidates) == 0:
        return chosen
    # longest time left first, then the slowest; lexsort is stable, so then by position
    order = candidates[np.lexsort((rate[candidates], -time_left[candidates]))]
    chosen[order[:free_slots]] = True
    return chosen


def speculation_cap(n_tasks: int, speculative_cap: float) -> int:
    """Speculative copies allowed at once: floor(cap * n_tasks), at least 1."""
    return max(1, math.floor(speculative_cap * n_tasks + 1e-9))


class LATE(Method):
    name: ClassVar[str] = "LATE"
    family: ClassVar[str] = SCHEDULERS_FAMILY
    defaults: ClassVar[dict[str, Any]] = {
        "slow_task_percentile": Param(
            25.0,
            float,
            gt=0,
            le=100,
            doc="SlowTaskThreshold: a task slower than this percentile of progress rates may be speculated",
        ),  # SlowTaskThreshold
        "speculative_cap": Param(
            0.10,
            float,
            gt=0,
            le=1,
            doc="SpeculativeCap: most tasks speculated, as a share of the job's tasks",
        ),  # SpeculativeCap, share of the job's tasks
        "min_elapsed": Param(
            60.0, float, ge=0, doc="seconds a task runs before it may be speculated"
        ),  # seconds a task runs before it may be speculated
    }

    def __init__(self, params: dict[str, Any] | None = None, seed: int = 0):
        super().__init__(params, seed)
        percentile = self.params["slow_task_percentile"]
        if not (isinstance(percentile, (int, float)) and 0 < percentile <= 100):
            raise ValueError(
                f"method {self.name}: slow_task_percentile must be in (0, 100], got {percentile!r}"
            )
        cap = self.params["speculative_cap"]
        if not (isinstance(cap, (int, float)) and 0 < cap <= 1):
            raise ValueError(f"method {self.name}: speculative_cap must be in (0, 1], got {cap!r}")
        min_elapsed = self.params["min_elapsed"]
        if not (isinstance(min_elapsed, (int, float)) and min_elapsed >= 0):
            raise ValueError(f"method {self.name}: min_elapsed must be >= 0, got {min_elapsed!r}")

    def start_job(self, job: JobInfo) -> None:
        super().start_job(job)
        self.cap = speculation_cap(job.n_tasks, float(self.params["speculative_cap"]))
        self.speculated = np.zeros(0, dtype=np.int64)  # task positions flagged so far

    def active_speculations(self, checkpoint: Checkpoint) -> int:
        """Speculated tasks whose original has not finished by this checkpoint."""
        if len(self.speculated) == 0:
            return 0
        return int(np.count_nonzero(~np.isin(self.speculated, checkpoint.finished_tasks)))

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        n_run = len(checkpoint.running_tasks)
        if n_run == 0:
            return np.zeros(0, dtype=bool)
        free = self.cap - self.active_speculations(checkpoint)
        if free <= 0:
            return np.zeros(n_run, dtype=bool)
        estimate = estimate_progress(checkpoint, self.job.feature_names)
        chosen = late_selection(
            estimate.progress,
            checkpoint.running_elapsed,
            free,
            float(self.params["slow_task_percentile"]),
            float(self.params["min_elapsed"]),
        )
        self.speculated = np.concatenate([self.speculated, checkpoint.running_tasks[chosen]])
        return chosen
