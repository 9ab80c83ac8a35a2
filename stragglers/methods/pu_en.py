"""PU-EN: Elkan & Noto (2008) positive-unlabeled classifier (pulearn's ElkanotoPuClassifier).

A classifier g(x) = P(s = 1 | x) separates labelled (finished) from unlabeled (running)
tasks; c = mean g over a held-out part of the labelled tasks estimates P(s = 1 | y = 1), and
P(y = 1 | x) = g(x) / c. A running task is flagged when P(y = 1 | x) < 0.5, y = 1 being the
finished (non-straggler) class.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from stragglers.methods._pu import PUMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pulearn import ElkanotoPuClassifier

# pulearn holds out a uniform random share of all rows to estimate c; when that share holds
# no labelled row (likely with few finished tasks) it raises: retry with other draws.
HOLD_OUT_DRAWS = 20


class PUElkanNoto(PUMethod):
    name: ClassVar[str] = "PU-EN"
    defaults: ClassVar[dict[str, Any]] = {
        "hold_out_ratio": Param(
            0.1,
            float,
            gt=0,
            lt=1,
            doc="share of the labelled rows held out to estimate P(labelled | positive)",
        ),  # the paper's code and pulearn's default
        "C": Param(
            1.0, float, gt=0, doc="inverse regularisation strength of the RBF SVM"
        ),  # SVC defaults, as in the paper's code
        "flag_below": Param(
            0.5,
            float,
            ge=0,
            le=1,
            doc="P(finished class | x) below which a running task is flagged",
        ),
        "refit_growth": 0.1,
    }

    def make_classifier(self, seed: int, n_labelled: int, n_unlabeled: int) -> ElkanotoPuClassifier:
        from pulearn import ElkanotoPuClassifier

        from stragglers.methods._pu import PlattSVC

        return ElkanotoPuClassifier(
            estimator=PlattSVC(C=self.params["C"], random_state=seed),
            hold_out_ratio=self.params["hold_out_ratio"],
            random_state=seed,
        )

    def fit_classifier(self, X: np.ndarray, s: np.ndarray, seed: int):
        rng = np.random.default_rng(seed)
        for _ in range(HOLD_OUT_DRAWS):
            classifier = self.make_classifier(int(rng.integers(2**31 - 1)), int(s.sum()), 0)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    classifier.fit(X, s)
            except ValueError as err:
                # hold-out without a labelled row, or a training part left with one class
                if "hold-out" in str(err) or "two classes" in str(err):
                    continue
                raise
            return classifier
        return None
