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

Not modelled (docs/methods.md, "Spark-speculation"): the efficiency check Spark runs since 3.4
(`spark.speculation.efficiency.*`: a task past the threshold is speculated only if it runs
longer than 2 x the threshold or reads records slower than 0.75 x the stage's mean rate); a
running task's records read are not in the traces, so every task past the threshold counts as
inefficient, as with the check off. Executor decommissioning is not in the traces either.
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
) -> np.ndarray:
    """Spark's check over the running tasks: bool per running task, True = speculate now.

    `runtime`: each running task's time running (seconds); `succeeded`: the durations of the
    task set's successful tasks; `n_tasks`: the task set's size."""
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
    return runtime > threshold


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
    }

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
        )
