"""MCD's detector (stragglers/methods/_robust_covariance.py) gives PyOD's MCD values bit for
bit: the same support, location, covariance, distances, threshold and scores, and the
non-robust covariance scikit-learn's `empirical_covariance`."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pyod.models.mcd import MCD as PyodMCD
from sklearn.covariance import empirical_covariance

from stragglers.methods._robust_covariance import fast_mcd_class, support_covariance


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _training_sets(count: int, seed: int):
    """Training rows as MCD gets them (z-scored finished tasks, constant columns dropped) and
    the edge cases: ties, duplicated rows, one column, nearly collinear columns, outliers,
    fewer rows than columns."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        n = int(rng.integers(3, 80))
        d = int(rng.integers(1, 5))
        X = rng.normal(size=(n, d))
        shape = trial % 6
        if shape == 1:
            X = np.round(X)
        elif shape == 2:
            X = X[np.arange(n) % max(1, n // 4)]
        elif shape == 3 and d > 1:
            X[:, 1] = 2 * X[:, 0] + 1e-9 * rng.normal(size=n)
        elif shape == 4:
            X[: max(1, n // 10)] *= 50.0
        elif shape == 5:
            X = rng.normal(size=(min(n, d + 1), d))
        yield X


def test_support_covariance_equals_empirical_covariance():
    rng = np.random.default_rng(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for trial in range(500):
            n, d = int(rng.integers(1, 40)), int(rng.integers(1, 5))
            X = rng.normal(size=(n, d)) * 10 ** rng.uniform(-5, 5)
            if trial % 5 == 1:
                X = np.asfortranarray(np.round(X))
            if trial % 5 == 2:
                X = X[:, 0]  # one-dimensional: a single sample
            if trial % 5 == 3:
                X = X[::2]  # a strided view
            if trial % 7 == 4:
                X = np.where(X > 0, np.nan, X)  # what empirical_covariance lets through
            centred = trial % 3 == 0
            expected = empirical_covariance(X, assume_centered=centred)
            ours = support_covariance(X, assume_centered=centred)
            assert _same(ours, expected) or (
                ours.shape == expected.shape and np.array_equal(ours, expected, equal_nan=True)
            )


@pytest.mark.parametrize(("seed", "centred"), [(0, False), (42, False), (123456789, True)])
def test_fast_mcd_equals_pyods(seed, centred):
    FastMCD = fast_mcd_class()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for X in _training_sets(40, seed % 1000):
            try:
                expected = PyodMCD(
                    contamination=0.1, random_state=seed, assume_centered=centred
                ).fit(X)
            except Exception as err:
                with pytest.raises(type(err)):
                    FastMCD(contamination=0.1, random_state=seed, assume_centered=centred).fit(X)
                continue
            ours = FastMCD(contamination=0.1, random_state=seed, assume_centered=centred).fit(X)
            for name in (
                "raw_location_",
                "raw_covariance_",
                "raw_support_",
                "location_",
                "covariance_",
                "support_",
                "dist_",
            ):
                assert _same(getattr(ours.detector_, name), getattr(expected.detector_, name))
            assert _same(ours.decision_scores_, expected.decision_scores_)
            assert ours.threshold_ == expected.threshold_
            probe = np.vstack([X, X[::-1] * 1.5 + 0.25])
            assert _same(ours.decision_function(probe), expected.decision_function(probe))
            assert _same(ours.predict(probe), expected.predict(probe))


def _symmetric_matrices(rng):
    """Covariances as FastMCD's steps make them (full rank, rank deficient, a zero row and
    column, duplicated rows), 1 x 1 ones, indefinite symmetric ones, all zero."""
    for trial in range(400):
        n = int(rng.integers(1, 16))
        rows = rng.normal(size=(int(rng.integers(1, 40)), n)) * 10.0 ** rng.integers(-6, 7)
        if trial % 5 == 1:
            rows[:, 0] = 3.0
        if trial % 7 == 2:
            rows = np.repeat(rows[:2], 5, axis=0)
        matrix = np.cov(rows.T, bias=1).reshape(n, n)
        if trial % 11 == 3:
            other = rng.normal(size=(n, n))
            matrix = other + other.T
        if trial % 13 == 4:
            matrix = np.zeros((n, n))
        yield matrix


def test_symmetric_pseudo_inverse_equals_scipys_pinvh():
    from scipy import linalg

    from stragglers.methods._robust_covariance import symmetric_pseudo_inverse

    rng = np.random.default_rng(73)
    for matrix in _symmetric_matrices(rng):
        expected = linalg.pinvh(matrix)
        ours = symmetric_pseudo_inverse(matrix)
        assert ours.dtype == expected.dtype and ours.shape == expected.shape
        assert ours.tobytes() == expected.tobytes(), matrix.shape
        assert symmetric_pseudo_inverse(matrix, check_finite=False).tobytes() == ours.tobytes()
    # scipy's own call: other tolerances, the upper triangle, float32, rank, its errors
    matrix = np.cov(rng.normal(size=(9, 4)).T)
    for kwargs in ({"atol": 1e-3}, {"rtol": 0.5}, {"lower": False}):
        assert (
            symmetric_pseudo_inverse(matrix, **kwargs).tobytes()
            == linalg.pinvh(matrix, **kwargs).tobytes()
        )
    single = matrix.astype(np.float32)
    assert symmetric_pseudo_inverse(single).tobytes() == linalg.pinvh(single).tobytes()
    ours, rank = symmetric_pseudo_inverse(matrix, return_rank=True)
    theirs, their_rank = linalg.pinvh(matrix, return_rank=True)
    assert ours.tobytes() == theirs.tobytes() and rank == their_rank
    for bad in (np.where(matrix > 0.1, np.nan, matrix), np.full((3, 3), np.inf), np.ones((2, 3))):
        with pytest.raises(ValueError):
            linalg.pinvh(bad)
        with pytest.raises(ValueError):
            symmetric_pseudo_inverse(bad)
