"""The sequential isolation-forest scoring (stragglers/methods/_isolation_scores.py) gives
scikit-learn's and PyOD's scores bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import IsolationForest

from stragglers.methods._isolation_scores import FastIForest, SequentialIsolationForest


def _rows(seed: int, n: int, rounded: bool) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, 6))
    return np.round(rows) if rounded else rows


@pytest.mark.parametrize(
    ("n", "settings"),
    [
        (1, {}),  # one training row: depths and denominator 0, every score 1
        (8, {}),
        (60, {"max_features": 0.5}),  # subsampled features
        (300, {"max_samples": 64, "bootstrap": True}),
    ],
)
def test_sequential_scores_equal_scikit_learns(n, settings):
    for rounded in (False, True):
        train, test = _rows(n, n, rounded), _rows(n + 1, 37, rounded)
        theirs = IsolationForest(n_estimators=30, random_state=4, **settings).fit(train)
        ours = SequentialIsolationForest(n_estimators=30, random_state=4, **settings).fit(train)
        for rows in (train, test):
            assert ours.score_samples(rows).tobytes() == theirs.score_samples(rows).tobytes()
            assert (
                ours.decision_function(rows).tobytes() == theirs.decision_function(rows).tobytes()
            )
        assert ours.offset_ == theirs.offset_


def test_fast_iforest_equals_pyods():
    """Same training scores, threshold and test scores as PyOD's IForest, and PyOD's
    IsolationForest name restored afterwards."""
    import pyod.models.iforest as pyod_iforest

    train, test = _rows(1, 120, True), _rows(2, 40, False)
    theirs = pyod_iforest.IForest(random_state=9, n_jobs=1).fit(train)
    ours = FastIForest(random_state=9, n_jobs=1).fit(train)
    assert isinstance(ours.detector_, SequentialIsolationForest)
    assert ours.decision_scores_.tobytes() == theirs.decision_scores_.tobytes()
    assert ours.threshold_ == theirs.threshold_
    assert ours.decision_function(test).tobytes() == theirs.decision_function(test).tobytes()
    assert pyod_iforest.IsolationForest is IsolationForest
