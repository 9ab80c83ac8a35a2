"""Outlier detection baselines (PyOD): fit on finished tasks, flag running tasks as outliers.

At a fit, features are z-scored with the mean and spread of all tasks visible at that
checkpoint (finished and running; see `_features.fit_standardizer`) and the detector is fit on
the finished tasks. At every checkpoint the running tasks are z-scored with the statistics of
the current fit and flagged by the detector's own threshold (`threshold_`, the (1 - c)
quantile of the training scores with contamination c = 0.1), i.e. PyOD's `predict`.

The replay protocol's outlier rules (stragglers/formats/protocols.py, docs/protocols.md) switch
each of these choices to the authors' `code/run_od.py` way under `replay.protocol: paper`:
features as given (`outlier_scaling`), the detectors' own parameters with a detector that
raises flagging nothing (`outlier_small_train`), batch scoring of the running tasks alone
(`outlier_batch`), random state 42 (`outlier_seed`), a refit at every checkpoint
(`outlier_refit`) and every column kept (`outlier_constant_columns`); `abod_object` and
`xgbod` are read by those detectors.

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

# the reference script's random state (`--rs` default of code/run_od.py), rule `outlier_seed`
SCRIPT_RANDOM_STATE = 42


@dataclass(frozen=True)
class OutlierFit:
    scaler: Standardizer | None  # None: features as given (rule `outlier_scaling: as_given`)
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
    protocol_rules: ClassVar[tuple[str, ...]] = (
        "outlier_scaling",
        "outlier_small_train",
        "outlier_batch",
        "outlier_seed",
        "outlier_refit",
        "outlier_constant_columns",
    )
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": Param(
            0.1,
            float,
            gt=0,
            le=0.5,
            doc="share of the training rows the detector takes as outliers (its score threshold)",
        ),
    }

    min_train: ClassVar[int] = 2  # fewest finished tasks the detector can be fit on
    # Drop columns constant over the finished tasks (covariance/histogram based detectors
    # cannot use them); distance-based detectors keep them, a running task that differs in
    # such a column is then far from every finished task.
    drop_constant_training_columns: ClassVar[bool] = False
    # PyOD's COF, SOD and SOS score a batch against itself, not against the fitted data:
    # score running tasks in one batch with the training rows and keep their part.
    score_with_training: ClassVar[bool] = False

    # scikit-learn's validation without its dataframe probe (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._library_swap",)

    @abc.abstractmethod
    def make_detector(self, n_train: int, seed: int) -> Any:
        """A fresh, unfitted PyOD detector for `n_train` training rows."""

    @property
    def abstains(self) -> bool:
        """Rule `outlier_small_train: abstain`: the detector's own parameters, and a detector
        that raises at a checkpoint flags nothing there (the script's detectors raise on
        training sets smaller than their neighbourhoods)."""
        return self.rules.outlier_small_train == "abstain"

    def neighbours(self, wanted: int, n_train: int) -> int:
        """A neighbour count: as configured when abstaining, else shrunk to fit n_train."""
        return int(wanted) if self.abstains else shrink_neighbours(wanted, n_train)

    def refit_each_checkpoint(self) -> bool:
        # rule `outlier_refit: every_checkpoint`. Features as given are the same at every
        # checkpoint and every detector is seeded, so a refit on an unchanged finished set
        # would give the same detector: refitting whenever a task finished is the script's
        # refit at every checkpoint (z-scores move with the running tasks: refit each time)
        return (
            self.rules.outlier_refit == "every_checkpoint"
            and self.rules.outlier_scaling == "zscore"
        )

    def refit_growth(self) -> float:
        if self.rules.outlier_refit == "every_checkpoint":
            return 0.0
        return super().refit_growth()

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        from stragglers.methods._library_swap import numpy_arrays_not_dataframes

        # the detectors' inputs are numpy arrays: scikit-learn's validation of them need not
        # ask narwhals whether they are dataframes (same answer, a tenth of the CPU)
        with numpy_arrays_not_dataframes():
            return super().predict(checkpoint)

    def fit_detector(self, train: np.ndarray, checkpoint: Checkpoint, seed: int) -> Any | None:
        """Fit a detector on the training rows; None if it cannot be fit."""
        detector = self.make_detector(len(train), seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyOD/sklearn warn on small or tied samples
            detector.fit(train)
        return detector

    def training_columns(self, scaler: Standardizer | None, z_finished: np.ndarray) -> np.ndarray:
        if self.drop_constant_training_columns and self.rules.outlier_constant_columns == "drop":
            return varying_columns(z_finished)
        if scaler is None:
            return np.ones(z_finished.shape[1], dtype=bool)
        return scaler.varying.copy()

    def _fit(self, checkpoint: Checkpoint) -> OutlierFit | None:
        n_finished = len(checkpoint.finished_tasks)
        if n_finished == 0 or (n_finished < self.min_train and not self.abstains):
            return None
        if self.rules.outlier_scaling == "as_given":
            scaler = None
            z_finished = np.asarray(checkpoint.finished_features, dtype=np.float64)
        else:
            scaler = fit_standardizer(checkpoint.finished_features, checkpoint.running_features)
            z_finished = scaler.transform(checkpoint.finished_features)
        columns = self.training_columns(scaler, z_finished)
        if not columns.any():
            return None  # nothing varies: no task can be told apart from another
        train = np.ascontiguousarray(z_finished[:, columns])
        if self.rules.outlier_seed == "fixed":
            seed = SCRIPT_RANDOM_STATE
        else:
            seed = job_seed(self.seed, self.job.seed, checkpoint.index)
        if self.abstains:
            try:
                detector = self.fit_detector(train, checkpoint, seed)
            except Exception:  # any failure of the detector: the script's guard (see abstains)
                return None
        else:
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
        running = checkpoint.running_features
        if state.scaler is not None:
            running = state.scaler.transform(running)
        running = np.ascontiguousarray(np.asarray(running, dtype=np.float64)[:, state.columns])
        if state.train is not None and self.rules.outlier_batch == "running_only":
            # the running tasks as a batch of their own, in the script's row order; a batch
            # the detector cannot score (fewer rows than its neighbourhood) flags nothing, as
            # the script's guarded detector
            order = checkpoint.running_order
            if order is None:
                order = np.arange(len(running))
            flags = np.zeros(len(running), dtype=bool)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    flags[order] = np.asarray(state.detector.predict(running[order])) == 1
            except Exception:
                flags[:] = False
            return flags
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
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    new = np.asarray(state.detector.predict(running[todo])) == 1
            except Exception:
                if not self.abstains:
                    raise
                new = np.zeros(len(todo), dtype=bool)  # the script's guard (see abstains)
            flags[todo] = new
            for i, flag in zip(todo, new.tolist()):
                state.flag_cache[int(checkpoint.running_tasks[i])] = (keys[i], flag)
        return flags
