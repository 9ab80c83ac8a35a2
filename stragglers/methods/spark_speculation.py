"""Spark-speculation: Apache Spark's speculative-execution rule (TaskSetManager), no model.

Spark's task scheduler checks every `spark.speculation.interval` (100 ms) whether a running
task of a stage should get a speculative copy (TaskSetManager.checkSpeculatableTasks and
checkAndSubmitSpeculatableTasks, Spark 4; the settings are `spark.speculation.*` in Spark's
docs/configuration.md). Here a job is Spark's task set (a stage attempt) and each checkpoint
is one check:

    min_finished = max(floor(quantile x n_tasks), 1)
    once at least min_finished tasks have succeeded:
        median    = the successful durations sorted, element floor(n_succeeded / 2)
                    (Spark's PercentileHeap at 0.5: the upper median of an even count)
        threshold = max(multiplier x median, min_task_runtime)
        a running task is speculatable when its runtime > threshold (strictly)
    before that, with `task_duration_threshold` set and n_tasks <= `executor_slots`:
        a running task is speculatable when its runtime > task_duration_threshold

A job of one task is never speculated unless `task_duration_threshold` is set. Each task is
speculated at most once (Spark keeps `speculatableTasks`; the replay asks only about tasks not
flagged yet). Defaults are Spark 4's (multiplier 3, quantile 0.9; Spark 3: 1.5 and 0.75) and
minTaskRuntime's 100 ms.

The efficiency check Spark runs since 3.4 (`spark.speculation.efficiency.*`), with
`efficiency: true` and a records-read rate among the features (`records_column`; a live
recording's `records_read_rate`, stragglers/live/spark.py): a task past the threshold is
speculated only if it has run longer than long_run_task_factor (2) x the threshold, or reads
records slower than process_rate_multiplier (0.75) x the stage's rate over its finished tasks
(their records over their time: the latency-weighted mean of their rates; a stage reading
no records is not checked, as in Spark). Off by default: the
traces have no running task's records read, and then every task past the threshold counts as
inefficient, as with the check off. Executor decommissioning is not in the traces.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from stragglers.methods.base import Checkpoint, Method, Param
from stragglers.methods.elapsed import SCHEDULERS_FAMILY


def spark_median(durations: np.ndarray) -> float:
    """Spark's median of the successful durations: sorted[floor(n / 2)] (PercentileHeap)."""
    ordered = np.sort(np.asarray(durations, dtype=np.float64))
    return float(ordered[len(ordered) // 2])


def speculatable(
    runtime: np.ndarray,
    succeeded: np.ndarray,
    n_tasks: int,
    *,
    multiplier: float,
    quantile: float,
    min_task_runtime: float,
    task_duration_threshold: float | None = None,
    executor_slots: int = 1,
    efficiency: tuple[np.ndarray, np.ndarray, float, float] | None = None,
) -> np.ndarray:
    """Spark's check over the running tasks: bool per running task, True = speculate now.

    `runtime`: each running task's time running (seconds); `succeeded`: the durations of the
    task set's successful tasks; `n_tasks`: the task set's size. `efficiency`: (the running
    tasks' record rates, the successful tasks' rates, process_rate_multiplier,
    long_run_task_factor) for Spark's efficiency check; None: the check is off."""
    runtime = np.asarray(runtime, dtype=np.float64)
    succeeded = np.asarray(succeeded, dtype=np.float64)
    if len(runtime) == 0:
        return np.zeros(0, dtype=bool)
    custom = task_duration_threshold is not None and task_duration_threshold > 0
    if n_tasks == 1 and not custom:
        return np.zeros(len(runtime), dtype=bool)
    min_finished = max(int(np.floor(quantile * n_tasks + 1e-9)), 1)
    if len(succeeded) >= min_finished:
        threshold = max(multiplier * spark_median(succeeded), min_task_runtime)
    elif custom and n_tasks <= executor_slots:
        threshold = float(task_duration_threshold)
    else:
        return np.zeros(len(runtime), dtype=bool)
    past = runtime > threshold
    if efficiency is None:
        return past
    running_rate, succeeded_rate, multiplier_rate, long_run = efficiency
    weight = np.nansum(succeeded)
    stage_rate = np.nansum(np.asarray(succeeded_rate) * succeeded) / weight if weight > 0 else 0.0
    if not stage_rate > 0:
        # Spark checks efficiency only when the stage's rate is positive: a stage that reads
        # no records (a parallelized collection) is speculated as with the check off
        return past
    # a task with no rate yet reads at 0, as Spark's running-task rate before any metrics
    rate = np.nan_to_num(np.asarray(running_rate, dtype=np.float64), nan=0.0)
    return past & ((rate < multiplier_rate * stage_rate) | (runtime > long_run * threshold))


class SparkSpeculation(Method):
    name: ClassVar[str] = "Spark-speculation"
    family: ClassVar[str] = SCHEDULERS_FAMILY
    defaults: ClassVar[dict[str, Any]] = {
        "multiplier": Param(
            3.0, float, gt=0, doc="spark.speculation.multiplier: times the median duration"
        ),
        "quantile": Param(
            0.9,
            float,
            ge=0,
            le=1,
            doc="spark.speculation.quantile: share of the tasks that must have succeeded",
        ),
        "min_task_runtime": Param(
            0.1, float, ge=0, doc="spark.speculation.minTaskRuntime, seconds"
        ),
        "task_duration_threshold": Param(
            None,
            float,
            gt=0,
            nullable=True,
            doc="spark.speculation.task.duration.threshold, seconds (null: unset)",
        ),
        "executor_slots": Param(
            1,
            int,
            ge=1,
            doc="task slots of one executor; the duration threshold applies to jobs no larger",
        ),
        "efficiency": Param(
            False,
            bool,
            doc="spark.speculation.efficiency.enabled (Spark 3.4+: on), where the data has "
            "`records_column`",
        ),
        "process_rate_multiplier": Param(
            0.75, float, gt=0, doc="spark.speculation.efficiency.processRateMultiplier"
        ),
        "long_run_task_factor": Param(
            2.0, float, gt=0, doc="spark.speculation.efficiency.longRunTaskFactor"
        ),
        "records_column": Param(
            "records_read_rate",
            str,
            doc="the feature holding a task's records read per second (the efficiency check)",
        ),
    }

    def _efficiency(self, checkpoint: Checkpoint):
        """The efficiency check's inputs, or None when it is off or the data lacks the column."""
        names = list(self.job.feature_names)
        column = self.params["records_column"]
        if not self.params["efficiency"] or column not in names:
            return None
        k = names.index(column)
        return (
            checkpoint.running_features[:, k],
            checkpoint.finished_features[:, k],
            float(self.params["process_rate_multiplier"]),
            float(self.params["long_run_task_factor"]),
        )

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        threshold = self.params["task_duration_threshold"]
        return speculatable(
            checkpoint.running_elapsed,
            checkpoint.finished_latency,
            self.job.n_tasks,
            multiplier=float(self.params["multiplier"]),
            quantile=float(self.params["quantile"]),
            min_task_runtime=float(self.params["min_task_runtime"]),
            task_duration_threshold=None if threshold is None else float(threshold),
            executor_slots=int(self.params["executor_slots"]),
            efficiency=self._efficiency(checkpoint),
        )
