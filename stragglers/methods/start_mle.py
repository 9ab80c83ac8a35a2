"""START-MLE: START's straggler rule with the Pareto fitted by maximum likelihood on the job.

At each checkpoint the Pareto (beta, alpha) is fitted to the job's finished latencies with the
running tasks right-censored at their elapsed time (stragglers.methods._start.pareto_mle); the
expected number of stragglers k_hat = n ((alpha-1)/(K alpha))^alpha follows, and once
n - round(k_hat) tasks have finished the remaining running tasks are flagged (START's
Algorithm 1). K (the paper's straggler multiple of the mean) comes from the jobs that had
finished before the job's first prediction: the median of their p_q / mean latency, so that
"K x the mean" marks the same share of tasks as the evaluation's p90 threshold did on them.

It is START without its network, so the network's contribution is measured.
Without any earlier finished job K is unknown: the method then uses k_hat = (1 - q) n (the
Pareto's own q-quantile as threshold) and counts the job in `k_fallback_jobs` (logged).
"""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

import numpy as np

from stragglers.methods._start import (
    expected_stragglers,
    history_mean_multiple,
    pareto_mle,
    start_rule,
)
from stragglers.methods.base import Checkpoint, JobInfo, Method, Param

log = logging.getLogger(__name__)


class StartMLE(Method):
    name: ClassVar[str] = "START-MLE"
    family: ClassVar[str] = "Systems"
    cross_job: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {
        "straggler_quantile": Param(
            0.90,
            float,
            gt=0,
            lt=1,
            doc="latency quantile of the straggler definition K is calibrated to",
        ),  # q of the straggler definition K is calibrated to
        "history_jobs": Param(
            20, int, ge=1, doc="latest earlier jobs K is taken from"
        ),  # latest earlier jobs K is taken from
    }
    k_fallback_jobs: ClassVar[int] = 0  # jobs without an earlier finished job (per process)

    def start_job(self, job: JobInfo) -> None:
        super().start_job(job)
        if job.history is None:
            raise ValueError(f"{self.name} learns across jobs: the replay gave no JobHistory")
        self.mean_multiple = math.nan
        self.k_hat = math.nan

    def _calibrate(self, time: float) -> None:
        self.mean_multiple, used = history_mean_multiple(
            self.job.history,
            time,
            self.params["straggler_quantile"],
            int(self.params["history_jobs"]),
        )
        if used == 0:
            type(self).k_fallback_jobs += 1
            log.info(
                "%s job %s: no earlier finished job, k_hat = (1 - q) n (fallback)",
                self.name,
                self.job.job_id,
            )

    def expected_stragglers(self, alpha: float) -> float:
        n = self.job.n_tasks
        if math.isnan(self.mean_multiple):
            return (1.0 - self.params["straggler_quantile"]) * n
        return expected_stragglers(n, alpha, self.mean_multiple)

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        if checkpoint.prescaled:
            raise ValueError(
                f"{self.name} fits a Pareto to latencies in seconds; "
                "the protocol's `scaling: final` rescales them"
            )
        if checkpoint.first_prediction:
            self._calibrate(checkpoint.time)
        _, alpha = pareto_mle(checkpoint.finished_latency, checkpoint.running_elapsed)
        self.k_hat = self.expected_stragglers(alpha)
        return start_rule(
            self.job.n_tasks,
            len(checkpoint.finished_tasks),
            self.k_hat,
            len(checkpoint.running_tasks),
        )
