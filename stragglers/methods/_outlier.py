"""Outlier detection baselines (PyOD): fit on finished tasks, flag running tasks as outliers.

At a fit, features are z-scored with the mean and spread of all tasks visible at that
checkpoint (finished and running; see `_features.fit_standardizer`) and the detector is fit on
the finished tasks. At every checkpoint the running tasks are z-scored with the statistics of
the current fit and flagged by the detector's own threshold (`threshold_`, the (1 - c)
quantile of the training scores with contamination c = 0.1), i.e. PyOD's `predict`.

Per-detector adaptations to online use live in the subclasses (one module per detector); see
docs/methods.md for the full list.
"""

from __future__ import annotations

import abc
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from stragglers.methods._features import Standardizer, fit_standardizer, job_seed, varying_columns
from stragglers.methods._online import OnlineRefitMethod
from stragglers.methods.base import Checkpoint, Param


@dataclass(frozen=True)
class OutlierFit:
    scaler: Standardizer
    columns: np.ndarray  # bool mask of the feature columns the detector uses
    detector: Any  # a fitted PyOD detector
    train: np.ndarray | None  # z-scored training rows, kept for transductive detectors
    # task position -> (its z-scored row when last scored, flag): a task whose features did
    # not change since is not scored again (exact: its score depends only on the fit)
    flag_cache: dict[int, tuple[bytes, bool]] = field(default_factory=dict)


def shrink_neighbours(wanted: int, n_train: int) -> int:
    """Largest usable neighbourhood size: PyOD's kNN-based detectors need k < n_train."""
    return int(max(1, min(int(wanted), n_train - 1)))


class OutlierDetectionMethod(OnlineRefitMethod):
    """Common fit/flag logic; subclasses say how to build (and, if needed, fit) the detector."""

    family: ClassVar[str] = "Outlier detection"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": Param(0.1, float, gt=0, le=0.5),
        "refit_growth": Param(0.0, float, ge=0),
    }

    min_train: ClassVar[int] = 2  # fewest finished tasks the detector can be fit on
    # Drop columns constant over the finished tasks (covariance/histogram based detectors
    # cannot use them); distance-based detectors keep them, a running task that differs in
    # such a column is then far from every finished task.
    drop_constant_training_columns: ClassVar[bool] = False
    # PyOD's COF, SOD and SOS score a batch against itself, not against the fitted data:
    # score running tasks in one batch with the training rows and keep their part.
    score_with_training: ClassVar[bool] = False

    @abc.abstractmethod
    def make_detector(self, n_train: int, seed: int) -> Any:
        """A fresh, unfitted PyOD detector for `n_train` training rows."""

    def fit_detector(self, train: np.ndarray, checkpoint: Checkpoint, seed: int) -> Any | None:
        """Fit a detector on the z-scored training rows; None if it cannot be fit."""
        detector = self.make_detector(len(train), seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyOD/sklearn warn on small or tied samples
            detector.fit(train)
        return detector

    def training_columns(self, scaler: Standardizer, z_finished: np.ndarray) -> np.ndarray:
        if self.drop_constant_training_columns:
            return varying_columns(z_finished)
        return scaler.varying.copy()

    def _fit(self, checkpoint: Checkpoint) -> OutlierFit | None:
        if len(checkpoint.finished_tasks) < self.min_train:
            return None
        scaler = fit_standardizer(checkpoint.finished_features, checkpoint.running_features)
        z_finished = scaler.transform(checkpoint.finished_features)
        columns = self.training_columns(scaler, z_finished)
        if not columns.any():
            return None  # nothing varies: no task can be told apart from another
        train = np.ascontiguousarray(z_finished[:, columns])
        seed = job_seed(self.seed, self.job.seed, checkpoint.index)
        detector = self.fit_detector(train, checkpoint, seed)
        if detector is None:
            return None
        return OutlierFit(
            scaler=scaler,
            columns=columns,
            detector=detector,
            train=train if self.score_with_training else None,
        )

    def _flag(self, state: OutlierFit, checkpoint: Checkpoint) -> np.ndarray:
        running = np.ascontiguousarray(
            state.scaler.transform(checkpoint.running_features)[:, state.columns]
        )
        if state.train is not None:
            # transductive: every running task's score depends on the whole batch
            batch = np.vstack([state.train, running])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scores = state.detector.decision_function(batch)[len(state.train) :]
            return np.asarray(scores) > state.detector.threshold_
        keys = [row.tobytes() for row in running]
        flags = np.zeros(len(running), dtype=bool)
        todo = []
        for i, (task, key) in enumerate(zip(checkpoint.running_tasks.tolist(), keys)):
            cached = state.flag_cache.get(task)
            if cached is not None and cached[0] == key:
                flags[i] = cached[1]
            else:
                todo.append(i)
        if todo:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                new = np.asarray(state.detector.predict(running[todo])) == 1
            flags[todo] = new
            for i, flag in zip(todo, new.tolist()):
                state.flag_cache[int(checkpoint.running_tasks[i])] = (keys[i], flag)
        return flags
