"""Base class for methods that refit a model on the finished tasks as a job runs.

A subclass implements `_fit(checkpoint)` (returns the fitted state, or None when the data at
this checkpoint cannot support a model, in which case nothing is flagged) and
`_flag(state, checkpoint)` (bool per running task). The base class validates each checkpoint,
caches the fitted state while the finished set is unchanged, and applies the refit schedule:
with `refit_growth` g > 0 the model is refit only once the finished set has grown by at least
a fraction g since the last fit (g = 0: refit whenever a task finished). A subclass whose data
also grows without tasks finishing (censored regression: running tasks' censoring times grow
with their elapsed time) reports that through `information()`, and is refit as well once that
quantity has grown by the fraction g (g = 0: at every checkpoint where it grew).
"""

from __future__ import annotations

import abc
import math
from typing import Any

import numpy as np

from stragglers.methods.base import Checkpoint, JobInfo, Method, Param


def validate_checkpoint(job: JobInfo, cp: Checkpoint) -> None:
    """Raise ValueError naming the job and checkpoint if the arrays are inconsistent."""
    d = len(job.feature_names)
    where = f"job {job.job_id}, checkpoint {cp.index} (t={cp.time})"
    n_fin = len(cp.finished_tasks)
    n_run = len(cp.running_tasks)
    expected = {
        "finished_features": (n_fin, d),
        "finished_latency": (n_fin,),
        "running_features": (n_run, d),
        "running_elapsed": (n_run,),
    }
    for field, shape in expected.items():
        actual = getattr(cp, field).shape
        if actual != shape:
            raise ValueError(f"{where}: {field} has shape {actual}, expected {shape}")


def grew(now: float, at_fit: float | None, refit_growth: float) -> bool:
    """Whether `now` exceeds the value at the last fit by at least the fraction refit_growth."""
    if at_fit is None:
        return True
    return now > at_fit and now - at_fit >= refit_growth * abs(at_fit)


def needs_refit(
    n_fitted: int | None,
    fitted_tasks: np.ndarray | None,
    finished_tasks: np.ndarray,
    refit_growth: float,
) -> bool:
    """Whether the finished set at a checkpoint calls for a new fit.

    `n_fitted`/`fitted_tasks` describe the finished set of the current fit (None: no fit yet).
    """
    if fitted_tasks is None or n_fitted is None:
        return True
    n_now = len(finished_tasks)
    if n_now == n_fitted and np.array_equal(np.sort(finished_tasks), fitted_tasks):
        return False
    return n_now - n_fitted >= max(1, math.ceil(refit_growth * n_fitted))


class OnlineRefitMethod(Method):
    """A method that fits on the data at a checkpoint and reuses the fit while it is current."""

    # subclasses extend this; every online method accepts the refit schedule
    defaults: dict[str, Any] = {
        "refit_growth": Param(
            0.0,
            float,
            ge=0,
            doc="refit once the finished tasks grew by this share since the last fit (0: whenever one more finished)",
        )
    }

    def __init__(self, params: dict[str, Any] | None = None, seed: int = 0):
        super().__init__(params, seed)
        growth = self.params.get("refit_growth", 0.0)
        if not (isinstance(growth, (int, float)) and growth >= 0 and math.isfinite(growth)):
            raise ValueError(
                f"method {self.name}: refit_growth must be a number >= 0, got {growth!r}"
            )
        self._state: Any = None
        self._fitted_tasks: np.ndarray | None = None
        self._n_fitted: int | None = None
        self._information_at_fit: float | None = None
        self.n_fits = 0  # fits done in the current job (for timing reports)

    def start_job(self, job: JobInfo) -> None:
        super().start_job(job)
        self._state = None
        self._fitted_tasks = None
        self._n_fitted = None
        self._information_at_fit = None
        self.n_fits = 0

    def refit_growth(self) -> float:
        """The refit schedule's g (parameter `refit_growth`)."""
        return float(self.params.get("refit_growth", 0.0))

    def refit_each_checkpoint(self) -> bool:
        """Whether to refit at every checkpoint whatever the schedule says."""
        return False

    def information(self, checkpoint: Checkpoint) -> float | None:
        """Amount of data beyond the finished set that calls for a refit when it grows (None:
        only the finished set counts)."""
        return None

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        job = getattr(self, "job", None)
        if job is None:
            raise RuntimeError(f"method {self.name}: predict() called before start_job()")
        validate_checkpoint(job, checkpoint)
        n_run = len(checkpoint.running_tasks)
        if n_run == 0:
            return np.zeros(0, dtype=bool)
        # a checkpoint that could not support a model is retried as soon as anything finishes
        growth = 0.0 if self._state is None else self.refit_growth()
        information = self.information(checkpoint)
        refit = self.refit_each_checkpoint() or needs_refit(
            self._n_fitted, self._fitted_tasks, checkpoint.finished_tasks, growth
        )
        if not refit and information is not None:
            refit = grew(information, self._information_at_fit, growth)
        if refit:
            self._state = self._fit(checkpoint)
            self._fitted_tasks = np.sort(np.asarray(checkpoint.finished_tasks))
            self._n_fitted = len(self._fitted_tasks)
            self._information_at_fit = information
            self.n_fits += 1
        if self._state is None:
            return np.zeros(n_run, dtype=bool)
        flags = np.asarray(self._flag(self._state, checkpoint), dtype=bool).reshape(-1)
        if flags.shape != (n_run,):
            raise RuntimeError(
                f"method {self.name}: produced {flags.shape} flags for {n_run} running tasks"
            )
        return flags

    @abc.abstractmethod
    def _fit(self, checkpoint: Checkpoint) -> Any:
        """Fit on the data visible at `checkpoint`; None if it cannot support a model."""

    @abc.abstractmethod
    def _flag(self, state: Any, checkpoint: Checkpoint) -> np.ndarray:
        """Bool per running task of `checkpoint`, using a state returned by `_fit`."""
