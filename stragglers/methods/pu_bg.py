"""PU-BG: bagging PU classifier (Mordelet & Vert, 2014; pulearn's BaggingPuClassifier).

Each of `n_estimators` classifiers is trained on all labelled (finished) tasks against a
bootstrap sample of the unlabeled (running) tasks; their averaged P(labelled | x) below 0.5
flags a running task.

Bag size: pulearn's default (max_samples=1.0, as many unlabeled rows as there are running
tasks), which the paper's code used. Early in a job there are far fewer finished than
running tasks, so every bag is dominated by unlabeled rows and P(labelled | x) is below 0.5
almost everywhere: nearly every running task is flagged (the paper reports FPR 0.99 on
Google). max_samples="balanced" draws as many unlabeled rows as there are labelled ones,
Mordelet & Vert's recommended setting.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from stragglers.methods._pu import PUMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pulearn import BaggingPuClassifier

    from stragglers.methods._platt_svm import PUBaggingFit


class PUBagging(PUMethod):
    name: ClassVar[str] = "PU-BG"
    defaults: ClassVar[dict[str, Any]] = {
        "n_estimators": Param(
            10, int, ge=1, doc="bagged classifiers"
        ),  # pulearn defaults, as in the paper's code
        # bootstrap size: a share of the unlabeled tasks, or "balanced" (= number of labelled)
        "max_samples": Param(
            1.0,
            float,
            gt=0,
            le=1,
            choices=("balanced",),
            doc="unlabeled rows per bag, as a share of the running tasks ('balanced': as many as labelled)",
        ),
        "C": Param(1.0, float, gt=0, doc="inverse regularisation strength of the RBF SVM"),
        "flag_below": Param(
            0.5,
            float,
            ge=0,
            le=1,
            doc="P(finished class | x) below which a running task is flagged",
        ),
        "refit_growth": 0.5,
    }

    def __init__(self, params: dict[str, Any] | None = None, seed: int = 0):
        super().__init__(params, seed)
        size = self.params["max_samples"]
        if size != "balanced" and not (isinstance(size, (int, float)) and 0 < size <= 1):
            raise ValueError(
                f"method {self.name}: max_samples must be in (0, 1] or 'balanced', got {size!r}"
            )

    def bag_size(self, n_labelled: int, n_unlabeled: int) -> float | int:
        if self.params["max_samples"] == "balanced":
            return int(max(1, min(n_labelled, n_unlabeled)))
        return float(self.params["max_samples"])

    def make_classifier(self, seed: int, n_labelled: int, n_unlabeled: int) -> BaggingPuClassifier:
        """pulearn's classifier that `fit_classifier` fits without its per-bag overhead."""
        from pulearn import BaggingPuClassifier

        from stragglers.methods._pu import PlattSVC

        return BaggingPuClassifier(
            estimator=PlattSVC(C=self.params["C"], random_state=seed),
            n_estimators=self.params["n_estimators"],
            max_samples=self.bag_size(n_labelled, n_unlabeled),
            oob_score=False,  # not used for prediction
            n_jobs=1,
            random_state=seed,
        )

    def fit_classifier(self, X: np.ndarray, s: np.ndarray, seed: int) -> PUBaggingFit:
        """`make_classifier(...)` fitted on (X, s): the same bags, draws and values
        (`_platt_svm.fit_pu_bagging`), without pulearn's clone and checks per bag."""
        from stragglers.methods._platt_svm import fit_pu_bagging
        from stragglers.methods._pu import PlattSVC

        n_labelled = int(s.sum())
        C = self.params["C"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fit_pu_bagging(
                X,
                s,
                lambda random_state: PlattSVC(C=C, random_state=random_state),
                n_estimators=self.params["n_estimators"],
                max_samples=self.bag_size(n_labelled, len(s) - n_labelled),
                random_state=seed,
            )
