"""XGBOD's isolation forests grown from one another instead of each from nothing.

PyOD's default XGBOD detector list (the `xgbod: script` rule) fits seven isolation forests of
10, 20, 50, 70, 100, 150 and 200 trees, all with the same random state, on the same rows: 600
trees at every fit, the most expensive part of the paper protocol's XGBOD. scikit-learn's
`warm_start` adds trees to a fitted forest and draws the new trees' seeds after skipping the
seeds of the trees it has, so a forest grown from 10 to N trees holds the same trees as one
fitted with N trees from the start (scikit-learn's own warm-start equivalence). `ForestGrower`
grows one forest through the sizes the detectors ask for, in the order they are fitted, and
hands each detector a copy at its size: 200 trees built instead of 600, the same forests
(built and scored tree by tree in a plain loop, stragglers/methods/_isolation_scores.py).
Each copy is then finished as IsolationForest.fit finishes (its per-tree path lengths and
offset, from its own trees), so its scores are computed exactly as a fresh forest's.
"""

from __future__ import annotations

import copy
import numbers
from typing import Any

import numpy as np
from pyod.models.iforest import IForest as PyodIForest
from pyod.models.xgbod import XGBOD as PyodXGBOD
from pyod.utils.utility import invert_order
from sklearn.ensemble import IsolationForest
from sklearn.utils import check_array

from stragglers.methods._isolation_scores import (
    FOREST_PARAMS,
    FastIForest,
    SequentialIsolationForest,
)

# PyOD's IForest's parameters (get_params reads each detector's signature again)
IFOREST_PARAMS = tuple(PyodIForest().get_params(deep=False))


class ForestGrower:
    """One isolation forest grown through the sizes asked for, on one set of rows."""

    def __init__(self) -> None:
        self._forest: IsolationForest | None = None
        self._rows: np.ndarray | None = None

    def _settings(self, detector: PyodIForest) -> dict[str, Any]:
        return {name: getattr(detector, name) for name in FOREST_PARAMS}

    def forest(self, X: np.ndarray, detector: PyodIForest) -> tuple[IsolationForest, np.ndarray]:
        """A fitted copy of the forest `detector` (a PyOD IForest) would fit on X, and its
        decision_function of X: grown from the current forest when it was fitted on the same
        rows with the same settings and fewer trees, else started afresh."""
        settings = self._settings(detector)
        current = self._forest
        if (
            current is None
            or current.n_estimators > detector.n_estimators
            or self._rows is None
            or self._rows.shape != X.shape
            or not np.array_equal(self._rows, X)
            or {name: getattr(current, name) for name in settings} != settings
        ):
            current = SequentialIsolationForest(
                n_estimators=detector.n_estimators, warm_start=True, **settings
            )
            self._forest, self._rows = current, X.copy()
        else:
            current.set_params(n_estimators=detector.n_estimators)
        decisions = current.fit_decision_function(X)
        return self._copy(current), decisions

    @staticmethod
    def _copy(forest: IsolationForest) -> IsolationForest:
        """The forest as it is now, apart from the lists the next warm start extends."""
        grown = copy.copy(forest)
        grown.estimators_ = list(forest.estimators_)
        grown.estimators_features_ = list(forest.estimators_features_)
        grown.warm_start = False
        return grown


class GrownIForest(FastIForest):
    """PyOD's IForest whose forest comes from a shared `ForestGrower` (`grower`): the same
    forest, decision scores and threshold as PyOD's own fit, when its random state is a
    seed (a RandomState object would advance between the forests: fitted afresh, as a
    FastIForest)."""

    def __init__(
        self,
        n_estimators=100,
        max_samples="auto",
        contamination=0.1,
        max_features=1.0,
        bootstrap=False,
        n_jobs=1,
        behaviour="old",
        random_state=None,
        verbose=0,
        grower: ForestGrower | None = None,
    ) -> None:
        super().__init__(
            n_estimators=n_estimators,
            max_samples=max_samples,
            contamination=contamination,
            max_features=max_features,
            bootstrap=bootstrap,
            n_jobs=n_jobs,
            behaviour=behaviour,
            random_state=random_state,
            verbose=verbose,
        )
        self.grower = grower

    def fit(self, X, y=None):
        if self.grower is None or not isinstance(self.random_state, numbers.Integral):
            return super().fit(X, y)
        X = check_array(X)
        self._set_n_classes(y)
        self.detector_, decisions = self.grower.forest(X, self)
        self.decision_scores_ = invert_order(decisions)
        self._process_decision_scores()
        return self


def grow_forests(estimators: list[Any]) -> list[Any]:
    """`estimators` (a detector list) with every PyOD IForest replaced by a GrownIForest of
    the same parameters, all sharing one ForestGrower."""
    grower = ForestGrower()
    out = []
    for estimator in estimators:
        if type(estimator) is PyodIForest:
            estimator = GrownIForest(
                **{name: getattr(estimator, name) for name in IFOREST_PARAMS}, grower=grower
            )
        out.append(estimator)
    return out


class GrownXGBOD(PyodXGBOD):
    """PyOD's XGBOD whose default detector list grows its isolation forests from one another
    (`grow_forests`); a list given to it is used as given."""

    def _init_detectors(self, X):
        estimators, standardise = super()._init_detectors(X)
        return grow_forests(estimators), standardise
