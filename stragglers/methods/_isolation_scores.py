"""Isolation-forest scores without joblib's dispatch per tree, same numbers as scikit-learn's.

scikit-learn's `IsolationForest` scores rows tree by tree through joblib (`Parallel` over
`delayed` calls, sequential by default), and each dispatched call sets up scikit-learn's
config and warning filters again: at the replay's batch sizes (tens of rows, 100 trees, a
score at every checkpoint) that dispatch costs more than the trees' own `apply`.
`SequentialIsolationForest` adds up the same per-tree path lengths in the same tree order
with the same numpy operations in a plain loop, so the depths, and the scores, are the same
bits; fitting, validation, chunking and the offset stay scikit-learn's. `FastIForest` is
PyOD's IForest fitting one. tests/test_isolation_scores.py checks both against the library,
value for value.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pyod.models.iforest as pyod_iforest
from sklearn.ensemble import IsolationForest
from sklearn.ensemble._iforest import _average_path_length


class SequentialIsolationForest(IsolationForest):
    """scikit-learn's IsolationForest scoring its trees in a loop instead of through joblib."""

    def _compute_score_samples(self, X, subsample_features):
        depths = np.zeros(X.shape[0], order="f")
        average_path_length_max_samples = _average_path_length([self._max_samples])
        for tree_idx, (tree, features) in enumerate(
            zip(self.estimators_, self.estimators_features_)
        ):
            rows = X[:, features] if subsample_features else X
            leaves = tree.apply(rows, check_input=False)
            depths += (
                self._decision_path_lengths[tree_idx][leaves]
                + self._average_path_length_per_tree[tree_idx][leaves]
                - 1.0
            )
        denominator = len(self.estimators_) * average_path_length_max_samples
        # a single training sample: denominator and depth are 0, the score 1 (as scikit-learn)
        return 2 ** (
            -np.divide(depths, denominator, out=np.ones_like(depths), where=denominator != 0)
        )


@contextlib.contextmanager
def _sequential_forests():
    """PyOD's IForest module building a SequentialIsolationForest for its IsolationForest
    (the name it imported), restored afterwards."""
    original = pyod_iforest.IsolationForest
    pyod_iforest.IsolationForest = SequentialIsolationForest
    try:
        yield
    finally:
        pyod_iforest.IsolationForest = original


class FastIForest(pyod_iforest.IForest):
    """PyOD's IForest with a SequentialIsolationForest as its detector."""

    def fit(self, X, y=None):
        with _sequential_forests():
            return super().fit(X, y)
