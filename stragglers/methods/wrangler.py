"""Wrangler (Yadwadkar et al., SoCC 2014): a linear SVM trained on labelled stragglers.

As in the NURD paper, Wrangler is given labelled examples from the job itself: a random 2/3 of
the job's stragglers and 2/3 of its non-stragglers (true labels: latency >= tau) form its
training set; it predicts the other tasks, and only those are scored
(`excluded_from_evaluation`). The method is therefore privileged.

Training features: at each checkpoint, each training task's feature vector as it is visible at
that checkpoint (final features if it has finished, the running-time features if it is still
running), so the model is trained on the same kind of point-in-time features it is applied to.
Training tasks not yet started are left out. The replay must keep the training tasks in the
checkpoints (Wrangler returns False for them, so they are never flagged) and only leave them
out of the metrics; if no training task is visible at a checkpoint Wrangler raises.
Features are z-scored with the statistics of all tasks visible at the checkpoint. Stragglers
are randomly oversampled (with replacement, seeded) until the classes are balanced, then a
linear SVM (hinge loss, C = 1) is fit; a running test task is flagged when its decision
value is > 0. The model is refit at every checkpoint because the running training tasks'
features change as they run.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import numpy as np

from stragglers.methods._features import fit_standardizer, job_seed
from stragglers.methods._online import validate_checkpoint
from stragglers.methods.base import Checkpoint, JobInfo, Method, Param


def stratified_training_split(labels: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Bool mask: a random `fraction` of each class (rounded to nearest) is marked training."""
    labels = np.asarray(labels, dtype=bool)
    rng = np.random.default_rng(seed)
    training = np.zeros(len(labels), dtype=bool)
    for cls in (False, True):
        members = np.flatnonzero(labels == cls)
        n_train = int(round(fraction * len(members)))
        training[rng.choice(members, size=n_train, replace=False)] = True
    return training


def oversample_minority(labels: np.ndarray, seed: int) -> np.ndarray:
    """Row indices that repeat random minority-class rows until both classes are equal."""
    labels = np.asarray(labels, dtype=bool)
    pos, neg = np.flatnonzero(labels), np.flatnonzero(~labels)
    if len(pos) == 0 or len(neg) == 0:
        return np.arange(len(labels))
    minority, majority = (pos, neg) if len(pos) < len(neg) else (neg, pos)
    rng = np.random.default_rng(seed)
    extra = rng.choice(minority, size=len(majority) - len(minority), replace=True)
    return np.r_[np.arange(len(labels)), extra]


class Wrangler(Method):
    name: ClassVar[str] = "Wrangler"
    family: ClassVar[str] = "Systems"
    privileged: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {
        "train_fraction": Param(
            2.0 / 3.0,
            float,
            gt=0,
            lt=1,
            doc="share of the job's tasks in the labelled training split",
        ),  # the NURD paper's protocol
        "C": Param(1.0, float, gt=0, doc="inverse regularisation strength of the linear SVM"),
        "oversample": Param(True, bool, doc="oversample the minority class of the training split"),
    }

    def __init__(self, params: dict[str, Any] | None = None, seed: int = 0):
        super().__init__(params, seed)
        fraction = float(self.params["train_fraction"])
        if not 0.0 < fraction < 1.0:
            raise ValueError(
                f"method {self.name}: train_fraction must be in (0, 1), got {fraction}"
            )
        self._training: np.ndarray | None = None
        self._labels: np.ndarray | None = None

    def start_job(self, job: JobInfo) -> None:
        super().start_job(job)
        if job.true_latency is None:
            raise ValueError(
                f"method {self.name} is privileged and needs JobInfo.true_latency "
                f"(job {job.job_id})"
            )
        latency = np.asarray(job.true_latency, dtype=np.float64)
        if latency.shape != (job.n_tasks,):
            raise ValueError(
                f"job {job.job_id}: true_latency has shape {latency.shape}, "
                f"expected ({job.n_tasks},)"
            )
        self._labels = latency >= job.straggler_threshold
        self._training = stratified_training_split(
            self._labels, float(self.params["train_fraction"]), job_seed(self.seed, job.seed)
        )

    def excluded_from_evaluation(self) -> np.ndarray | None:
        if self._training is None:
            return None
        return np.flatnonzero(self._training)

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        from sklearn.svm import LinearSVC

        if self._training is None or self._labels is None:
            raise RuntimeError(f"method {self.name}: predict() called before start_job()")
        validate_checkpoint(self.job, checkpoint)
        running = np.asarray(checkpoint.running_tasks, dtype=np.int64)
        flags = np.zeros(len(running), dtype=bool)
        test_running = ~self._training[running]
        if not test_running.any():
            return flags
        finished = np.asarray(checkpoint.finished_tasks, dtype=np.int64)
        fin_train = self._training[finished]
        run_train = self._training[running]
        X_train = np.vstack(
            [checkpoint.finished_features[fin_train], checkpoint.running_features[run_train]]
        )
        y_train = np.r_[self._labels[finished[fin_train]], self._labels[running[run_train]]]
        if y_train.size == 0:
            # Wrangler never flags its training tasks, so they stay visible until they finish;
            # none visible means the replay dropped them from the checkpoints
            raise RuntimeError(
                f"Wrangler: none of its {int(self._training.sum())} training tasks is in the "
                f"checkpoint at t={checkpoint.time} of job {self.job.job_id}; the replay must "
                "pass the tasks returned by excluded_from_evaluation() to predict() (finished "
                "or running) and only leave them out of the metrics"
            )
        if y_train.min() == y_train.max():
            return flags  # one class among the visible training tasks: nothing to learn
        scaler = fit_standardizer(checkpoint.finished_features, checkpoint.running_features)
        Z_train = scaler.transform(X_train)
        seed = job_seed(self.seed, self.job.seed, checkpoint.index)
        rows = (
            oversample_minority(y_train, seed)
            if self.params["oversample"]
            else np.arange(len(y_train))
        )
        svm = LinearSVC(
            C=float(self.params["C"]), loss="hinge", dual=True, max_iter=5000, random_state=seed
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning on separable or tiny sets
            svm.fit(Z_train[rows], y_train[rows])
        Z_test = scaler.transform(checkpoint.running_features[test_running])
        flags[test_running] = svm.decision_function(Z_test) > 0
        return flags
