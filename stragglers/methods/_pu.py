"""Positive-unlabeled baselines (pulearn): finished tasks are the labelled class.

PU learning's labelled "positive" class here is the finished tasks (known non-stragglers);
running tasks are unlabeled. A PU classifier estimates P(finished class | x); a running task
is flagged as a straggler when that probability is below `flag_below` (0.5).

The base classifier is an RBF support vector machine with Platt-scaled probabilities, as in
the paper's code (`SVC(probability=True)`, deprecated in scikit-learn 1.9): `PlattSVC` fits the
SVM on all rows and a sigmoid on out-of-fold decision values, like libsvm does.
"""

from __future__ import annotations

import abc
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

import numpy as np

from stragglers.methods._features import Standardizer, fit_standardizer, job_seed
from stragglers.methods._online import OnlineRefitMethod
from stragglers.methods.base import Checkpoint


@cache
def _platt_svc_class() -> type:
    """PlattSVC derives from scikit-learn's estimator classes, so it is defined on first use:
    importing the PU methods (the registry does, when the workflow loads) imports no
    scikit-learn. `stragglers.methods._pu.PlattSVC` names it (module `__getattr__`), so it
    pickles and imports like an ordinary class."""
    from sklearn.base import BaseEstimator, ClassifierMixin

    from stragglers.methods._platt_svm import fit_rbf_svc, fit_sigmoid, platt_decision_values

    class PlattSVC(ClassifierMixin, BaseEstimator):
        """RBF SVC with probabilities from a sigmoid fit on cross-validated decision values.

        Uses min(cv, smallest class size) stratified folds; with a class of a single row the
        sigmoid is fit on the in-sample decision values instead. scikit-learn's SVC,
        StratifiedKFold(shuffle=True) and LogisticRegression(C=1e6), called through
        `_platt_svm` without their per-call validation (same values, same draws).
        """

        def __init__(
            self,
            C: float = 1.0,
            gamma: str | float = "scale",
            cv: int = 5,
            random_state: int | None = None,
        ):
            self.C = C
            self.gamma = gamma
            self.cv = cv
            self.random_state = random_state

        # no sample_weight argument on purpose: pulearn's bagging then fits each estimator on
        # its bootstrap rows (with repeats) instead of zero-weighting the others
        def fit(self, X, y):
            X = np.asarray(X, dtype=np.float64)
            y = np.asarray(y).astype(int)
            self.classes_ = np.unique(y)
            if len(self.classes_) != 2:
                raise ValueError(f"PlattSVC needs two classes, got {self.classes_.tolist()}")
            positive = y == self.classes_[1]
            self.svc_ = fit_rbf_svc(X, y, self.C, self.gamma)
            decision = platt_decision_values(
                X, y, self.svc_, self.C, self.gamma, self.cv, self.random_state
            )
            self.sigmoid_ = fit_sigmoid(decision, positive, C=1e6)
            return self

        def predict_proba(self, X):
            decision = self.svc_.decision_function(np.asarray(X, dtype=np.float64))
            return self.sigmoid_.predict_proba(decision)

        def predict(self, X):
            return self.classes_[(self.predict_proba(X)[:, 1] >= 0.5).astype(int)]

    PlattSVC.__module__, PlattSVC.__qualname__ = __name__, "PlattSVC"
    return PlattSVC


def __getattr__(name: str) -> Any:
    if name == "PlattSVC":
        return _platt_svc_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class PUFit:
    scaler: Standardizer
    classifier: Any  # fitted pulearn classifier, class 1 = finished


class PUMethod(OnlineRefitMethod):
    """Fit a PU classifier with finished tasks labelled 1 and running tasks unlabeled (0)."""

    family: ClassVar[str] = "Positive-unlabeled"
    # PlattSVC's and PU-BG's library calls without their overhead (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._platt_svm",)
    min_class_rows: ClassVar[int] = 2  # fewest rows per class the classifier is fit on

    @abc.abstractmethod
    def make_classifier(self, seed: int, n_labelled: int, n_unlabeled: int) -> Any:
        """A fresh pulearn classifier."""

    def _fit(self, checkpoint: Checkpoint) -> PUFit | None:
        n_fin = len(checkpoint.finished_tasks)
        n_run = len(checkpoint.running_tasks)
        if min(n_fin, n_run) < self.min_class_rows:
            return None
        scaler = fit_standardizer(checkpoint.finished_features, checkpoint.running_features)
        if not scaler.varying.any():
            return None
        cols = scaler.varying
        X = np.vstack(
            [
                scaler.transform(checkpoint.finished_features)[:, cols],
                scaler.transform(checkpoint.running_features)[:, cols],
            ]
        )
        s = np.r_[np.ones(n_fin, dtype=int), np.zeros(n_run, dtype=int)]
        seed = job_seed(self.seed, self.job.seed, checkpoint.index)
        classifier = self.fit_classifier(X, s, seed)
        if classifier is None:
            return None
        return PUFit(scaler=scaler, classifier=classifier)

    def fit_classifier(self, X: np.ndarray, s: np.ndarray, seed: int) -> Any | None:
        classifier = self.make_classifier(seed, int(s.sum()), int(len(s) - s.sum()))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            classifier.fit(X, s)
        return classifier

    def _flag(self, state: PUFit, checkpoint: Checkpoint) -> np.ndarray:
        X = state.scaler.transform(checkpoint.running_features)[:, state.scaler.varying]
        p_finished_class = np.asarray(state.classifier.predict_proba(X))[:, 1]
        return p_finished_class < self.params["flag_below"]
