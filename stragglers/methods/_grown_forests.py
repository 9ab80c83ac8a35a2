"""XGBOD's isolation forests grown from one another instead of each from nothing.

PyOD's default XGBOD detector list (the `xgbod: script` rule) fits seven isolation forests of
10, 20, 50, 70, 100, 150 and 200 trees, all with the same random state, on the same rows: 600
trees at every fit, the most expensive part of the paper protocol's XGBOD. scikit-learn's
`warm_start` adds trees to a fitted forest and draws the new trees' seeds after skipping the
seeds of the trees it has, so a forest grown from 10 to N trees holds the same trees as one
fitted with N trees from the start, and the forest of n trees is the first n trees of the
forest of N (scikit-learn's own warm-start equivalence). `ForestGrower` fits one forest of the
most trees the detectors ask for (grown further if one asks for more) and hands each detector
a copy of its first n trees: 200 trees built instead of 600, the same forests (built and
scored tree by tree in a plain loop, stragglers/methods/_isolation_scores.py). Each copy is
finished as IsolationForest.fit finishes (its per-tree path lengths and offset, from its own
trees), so its scores are computed exactly as a fresh forest's.

A forest adds its trees' depths up in tree order, so the depths of its first n trees are those
of the forest of n trees: `NestedForest` scores a batch of rows for every size in one pass over
the trees (the training rows at fit, each batch the detectors score after), instead of one
pass per forest.
"""

from __future__ import annotations

import copy
import numbers
from typing import Any

import numpy as np
from pyod.models.iforest import IForest as PyodIForest
from pyod.models.xgbod import XGBOD as PyodXGBOD
from sklearn.ensemble import IsolationForest
from sklearn.utils import check_array
from sklearn.utils.validation import _check_n_features, check_is_fitted

from stragglers.methods._isolation_scores import (
    FOREST_PARAMS,
    FastIForest,
    SequentialIsolationForest,
)

# PyOD's IForest's parameters (get_params reads each detector's signature again)
IFOREST_PARAMS = tuple(PyodIForest().get_params(deep=False))


def plain_rows(X: Any) -> bool:
    """Whether X is what check_array would return unchanged and accept: a finite, non-empty,
    two-dimensional float64 numpy array."""
    return (
        type(X) is np.ndarray
        and X.dtype == np.float64
        and X.ndim == 2
        and X.shape[0] > 0
        and X.shape[1] > 0
        and bool(np.isfinite(X).all())
    )


def rows_key(X: np.ndarray) -> tuple:
    """The rows' identity by value: their shape, type and bytes."""
    return X.shape, X.dtype.str, X.tobytes()


class NestedForest:
    """A fitted forest, the sizes of the forests made of its first trees that detectors use,
    and the scores of the last batch of rows for those sizes."""

    def __init__(self, forest: SequentialIsolationForest, sizes: tuple[int, ...]) -> None:
        self.forest = forest
        self.sizes = sizes
        self._key: tuple | None = None
        self._scores: dict[int, np.ndarray] = {}

    def score_samples(self, rows: np.ndarray, n: int) -> np.ndarray:
        """`_score_samples(rows)` of the forest of the first n trees, for dense rows the
        forest has validated (float32, its feature count)."""
        key = rows_key(rows)
        if key != self._key:
            self._key, self._scores = key, {}
        if n not in self._scores:
            trees = len(self.forest.estimators_)
            sizes = sorted({m for m in self.sizes if m <= trees} - set(self._scores) | {n})
            subsample_features = self.forest._max_features != rows.shape[1]
            # IsolationForest._score_samples: the opposite of the chunked scores (each
            # row's score is its own: chunks change nothing)
            depths = self.forest.prefix_score_samples(rows, subsample_features, sizes)
            self._scores.update((m, -scores) for m, scores in zip(sizes, depths))
        return self._scores[n]


class ForestGrower:
    """One isolation forest grown through the sizes asked for, on one set of rows; `sizes`:
    the sizes the detectors will ask for, fitted at the first request."""

    def __init__(self, sizes: tuple[int, ...] = ()) -> None:
        self.sizes = tuple(sorted(set(sizes)))
        self._nested: NestedForest | None = None
        self._settings: dict[str, Any] | None = None
        self._rows: np.ndarray | None = None

    def _detector_settings(self, detector: PyodIForest) -> dict[str, Any]:
        return {name: getattr(detector, name) for name in FOREST_PARAMS}

    def forest(
        self, X: np.ndarray, detector: PyodIForest
    ) -> tuple[IsolationForest, np.ndarray, NestedForest]:
        """A fitted copy of the forest `detector` (a PyOD IForest) would fit on dense,
        validated X, its decision_function of X, and the nested forest it is the start of:
        grown from the current forest when it was fitted on the same rows with the same
        settings, else started afresh."""
        settings = self._detector_settings(detector)
        n = detector.n_estimators
        nested = self._nested
        if (
            nested is None
            or self._rows is None
            or self._rows.shape != X.shape
            or not np.array_equal(self._rows, X)
            or settings != self._settings
        ):
            # the offset needs each size's training scores: none for the whole forest
            current = SequentialIsolationForest(
                n_estimators=max((n, *self.sizes)),
                warm_start=True,
                **{**settings, "contamination": "auto"},
            )
            current.fit(X)
            self._settings, self._rows = settings, X.copy()
            nested = self._nested = NestedForest(current, self.sizes)
        elif len(nested.forest.estimators_) < n:
            nested.forest.set_params(n_estimators=n)
            nested.forest.fit(X)  # a warm start: the trees it has, and more
            nested = self._nested = NestedForest(nested.forest, self.sizes)
        # IsolationForest.fit's validation of the rows (dense: their float32 conversion)
        rows = check_array(X, accept_sparse=["csc"], dtype=np.float32, ensure_all_finite=False)
        training_scores = nested.score_samples(rows, n)
        grown = self._first_trees(nested.forest, n, settings["contamination"], training_scores)
        return grown, training_scores - grown.offset_, nested

    @staticmethod
    def _first_trees(
        forest: SequentialIsolationForest, n: int, contamination, training_scores: np.ndarray
    ) -> IsolationForest:
        """The forest of the first n trees of `forest`, finished as IsolationForest.fit
        finishes a forest of n trees (its offset from its training scores)."""
        grown = copy.copy(forest)
        grown.n_estimators = n
        grown.contamination = contamination
        grown.estimators_ = forest.estimators_[:n]
        grown.estimators_features_ = forest.estimators_features_[:n]
        grown._average_path_length_per_tree = forest._average_path_length_per_tree[:n]
        grown._decision_path_lengths = forest._decision_path_lengths[:n]
        grown._node_path_lengths = forest._node_path_lengths[:n]
        grown.warm_start = False
        if contamination == "auto":
            grown.offset_ = -0.5
        else:
            grown.offset_ = np.percentile(training_scores, 100.0 * contamination)
        return grown


# PyOD's `_process_decision_scores`: a detector's training threshold, labels and the mean
# and deviation of its training scores
TRAINING_THRESHOLD = ("threshold_", "labels_", "_mu", "_sigma")


class DeferredAttributes:
    """An object some of whose attributes, set together by one of its methods, are computed
    when one of them is first read (`_defer`) rather than when they are made."""

    def _defer(self, names: tuple[str, ...], compute: str) -> None:
        """Unset `names`, to be set by the method named `compute` on first read."""
        for name in names:
            self.__dict__.pop(name, None)
        self.__dict__["_deferred"] = (names, compute)

    def __getattr__(self, name: str):
        # reached only for attributes not set
        deferred = self.__dict__.get("_deferred")
        if deferred is not None and name in deferred[0]:
            del self.__dict__["_deferred"]
            getattr(self, deferred[1])()
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class DeferredThreshold(DeferredAttributes):
    """A PyOD detector whose `_process_decision_scores` (its training scores' percentile,
    labels, mean and deviation) runs when one of those is first read, once
    `defer_threshold` is set: XGBOD reads its members' training scores and their scores of
    new rows, never these (Zhao & Hryniewicki, 2018, Section 3.1). The values read are
    the ones PyOD's fit sets."""

    defer_threshold: bool = False

    def _process_decision_scores(self):
        self.__dict__.pop("_deferred", None)
        if not self.defer_threshold or not isinstance(self.contamination, float | int):
            return super()._process_decision_scores()
        self._defer(TRAINING_THRESHOLD, "_training_threshold")
        return self

    def _training_threshold(self) -> None:
        super()._process_decision_scores()


class GrownIForest(DeferredThreshold, FastIForest):
    """PyOD's IForest whose forest comes from a shared `ForestGrower` (`grower`): the same
    forest, decision scores and threshold as PyOD's own fit, when its random state is a
    seed and its rows a finite float64 array (else fitted afresh, as a FastIForest: a
    RandomState object would advance between the forests)."""

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
        self.nested_: NestedForest | None = None

    def fit(self, X, y=None):
        self.nested_ = None
        if (
            self.grower is None
            or not isinstance(self.random_state, numbers.Integral)
            or not plain_rows(X)
        ):
            return super().fit(X, y)
        self._set_n_classes(y)
        self.detector_, decisions, self.nested_ = self.grower.forest(X, self)
        self.decision_scores_ = decisions * -1  # invert_order
        self._process_decision_scores()
        return self

    def decision_function(self, X):
        """FastIForest.decision_function; rows that are a finite float64 array scored with
        the other sizes of the nested forest in one pass."""
        if self.nested_ is None or not plain_rows(X):
            return super().decision_function(X)
        # fit sets the threshold and labels with the scores (or defers them): checking the
        # scores does not compute a deferred threshold
        check_is_fitted(self, ["decision_scores_"])
        rows = np.asarray(X, dtype=np.float32)
        _check_n_features(self.detector_, rows, reset=False)
        scores = self.nested_.score_samples(rows, self.n_estimators)
        return (scores - self.detector_.offset_) * -1


def grow_forests(estimators: list[Any]) -> list[Any]:
    """`estimators` (a detector list) with every PyOD IForest replaced by a GrownIForest of
    the same parameters, all sharing one ForestGrower."""
    grower = ForestGrower(tuple(e.n_estimators for e in estimators if type(e) is PyodIForest))
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
