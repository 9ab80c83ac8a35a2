"""XGBOD's isolation forests grown from one another (stragglers/methods/_grown_forests.py)
are the forests PyOD fits from nothing: the same scores and thresholds, bit for bit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from stragglers.methods._grown_forests import ForestGrower, GrownIForest, GrownXGBOD

SIZES = (10, 20, 50, 70, 100, 150, 200)  # PyOD's default XGBOD list


@pytest.mark.parametrize("n_rows", [40, 300])
def test_grown_forests_equal_fresh_ones(n_rows):
    """Each size, grown from the one before, scores as a forest fitted with that size; a
    second random state or new rows start a new forest."""
    from pyod.models.iforest import IForest

    rng = np.random.default_rng(n_rows)
    grower = ForestGrower()
    for X in (rng.normal(size=(n_rows, 5)), rng.normal(size=(n_rows, 5))):
        test = rng.normal(size=(30, 5))
        for seed in (0, 42):
            for n in SIZES:
                fresh = IForest(n_estimators=n, random_state=seed).fit(X)
                grown = GrownIForest(n_estimators=n, random_state=seed, grower=grower).fit(X)
                assert len(grown.detector_.estimators_) == n
                assert grown.decision_scores_.tobytes() == fresh.decision_scores_.tobytes()
                assert grown.threshold_ == fresh.threshold_
                assert (
                    grown.decision_function(test).tobytes()
                    == fresh.decision_function(test).tobytes()
                )


@pytest.mark.parametrize(
    ("n_rows", "n_features", "kind"),
    [
        (2, 2, "normal"),
        (3, 1, "ties"),
        (5, 3, "duplicates"),
        (40, 4, "constant_column"),
        (300, 5, "ties"),
    ],
)
@pytest.mark.parametrize("order", [SIZES, (200, 10, 70, 20, 150, 50, 100, 35)])
def test_nested_forests_equal_fresh_ones(n_rows, n_features, kind, order):
    """A grower told the sizes fits the largest forest once and scores every size in one
    pass over its trees, at fit and for each batch scored after: each size's training
    scores, threshold and scores of new rows (batches scored in any order of the sizes) are
    a fresh forest's; a size it was not told of (35) too."""
    from pyod.models.iforest import IForest

    rng = np.random.default_rng(n_rows + n_features)
    X = rng.normal(size=(n_rows, n_features))
    if kind == "ties":
        X = np.round(X)
    elif kind == "duplicates":
        X[n_rows // 2 :] = X[: n_rows - n_rows // 2]
    elif kind == "constant_column":
        X[:, 0] = 1.5
    batches = (rng.normal(size=(9, n_features)), X, np.round(rng.normal(size=(4, n_features))))
    grower = ForestGrower(SIZES)
    fresh, grown = {}, {}
    for n in order:
        fresh[n] = IForest(n_estimators=n, random_state=0).fit(X)
        grown[n] = GrownIForest(n_estimators=n, random_state=0, grower=grower).fit(X)
        assert len(grown[n].detector_.estimators_) == n
        assert grown[n].decision_scores_.tobytes() == fresh[n].decision_scores_.tobytes()
        assert grown[n].threshold_ == fresh[n].threshold_
    assert len(grower._nested.forest.estimators_) == 200
    for batch in batches:
        for n in reversed(order):
            ours, theirs = grown[n].decision_function(batch), fresh[n].decision_function(batch)
            assert ours.tobytes() == theirs.tobytes()
    with pytest.raises(ValueError):
        grown[10].decision_function(batches[0][:, :-1] if n_features > 1 else np.hstack([X, X]))


def test_grown_forest_without_a_seed_is_fitted_afresh():
    """A RandomState object would advance between the forests: no growing then."""
    X = np.random.default_rng(0).normal(size=(50, 3))
    grower = ForestGrower()
    detector = GrownIForest(n_estimators=10, random_state=np.random.RandomState(0), grower=grower)
    detector.fit(X)
    assert grower._nested is None
    assert len(detector.detector_.estimators_) == 10


def test_grown_xgbod_equals_pyods():
    """PyOD's XGBOD with its default list, and ours: the same augmented features, scores
    and labels."""
    from pyod.models.xgbod import XGBOD

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 4))
    y = (rng.random(120) < 0.15).astype(int)
    test = rng.normal(size=(25, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = XGBOD(random_state=0, n_jobs=1).fit(X, y)
        ours = GrownXGBOD(random_state=0, n_jobs=1).fit(X, y)
        assert ours.X_train_add_.tobytes() == theirs.X_train_add_.tobytes()
        assert ours.decision_function(test).tobytes() == theirs.decision_function(test).tobytes()
        assert np.array_equal(ours.predict(test), theirs.predict(test))
