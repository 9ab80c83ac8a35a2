"""COF's chaining distances (stragglers/methods/_cof_kernel.py) give PyOD's `_cof_fast`
numbers, bit for bit: ties, duplicated rows, constant columns, NaN, every neighbourhood size
up to n - 1, and the same error beyond it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pyod.models.cof import COF

from stragglers.methods._cof_kernel import FastCOF, cof_scores


def _pyod_cof(X, n_neighbors):
    detector = COF(n_neighbors=max(2, n_neighbors))
    detector.n_neighbors_ = n_neighbors  # as PyOD's fit sets it (1 after a fit on 2 rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 0 / 0 for rows at distance 0 from their path
        return detector._cof_fast(X)


def _samples():
    """Batches as the replay's look, and their edge cases."""
    rng = np.random.default_rng(11)
    rounded = np.round(rng.normal(size=(50, 3)))  # many tied distances
    duplicated = rng.normal(size=(30, 4))
    duplicated[5:12] = duplicated[4]  # more copies of a row than some neighbourhoods
    constant = rng.normal(size=(25, 5))
    constant[:, 1] = 3.0
    all_equal = np.ones((8, 2))  # every distance 0: 0 / 0 everywhere
    grid = np.array([[x, y] for x in range(5) for y in range(5)], dtype=float)  # equidistant
    with_nan = rng.normal(size=(15, 3))
    with_nan[3, 1] = np.nan
    with_inf = rng.normal(size=(12, 2))
    with_inf[0, 0] = np.inf
    huge = rng.normal(size=(20, 2)) * 1e200  # distances overflow to inf
    return {
        "continuous": rng.normal(size=(120, 6)),
        "rounded": rounded,
        "duplicated": duplicated,
        "constant_column": constant,
        "all_equal": all_equal,
        "grid": grid,
        "with_nan": with_nan,
        "with_inf": with_inf,
        "huge": huge,
        "two_rows": rng.normal(size=(2, 3)),
        "one_column": np.round(rng.normal(size=(40, 1)), 1),
    }


@pytest.mark.parametrize("name", list(_samples()))
def test_cof_scores_equal_pyods_at_every_neighbourhood(name):
    """Every k from 1 to n - 1 (k = 15 the default, k = n - 1 PyOD's shrunk one)."""
    X = _samples()[name]
    for k in range(1, len(X)):
        expected = _pyod_cof(X, k)
        ours = cof_scores(X, k)
        assert ours.dtype == expected.dtype
        assert ours.tobytes() == expected.tobytes(), (name, k)


def test_cof_scores_equal_pyods_on_random_batches():
    """Many random batch shapes and neighbourhoods, rounded or not."""
    rng = np.random.default_rng(5)
    for trial in range(150):
        n = int(rng.integers(2, 70))
        X = rng.normal(size=(n, int(rng.integers(1, 7))))
        if trial % 2:
            X = np.round(X, int(rng.integers(0, 2)))
        if trial % 5 == 0:
            X[:, 0] = 0.5
        k = int(rng.integers(1, n))
        assert cof_scores(X, k).tobytes() == _pyod_cof(X, k).tobytes(), trial


@pytest.mark.parametrize("n", [1, 2, 5])
def test_cof_scores_raise_as_pyod_beyond_n_minus_1(n):
    """A batch of at most k rows: PyOD's loop fails; so does the replacement (the replay's
    guarded detector then flags nothing)."""
    X = np.arange(n * 2, dtype=float).reshape(n, 2)
    for k in (n, n + 3):
        with pytest.raises(IndexError):
            _pyod_cof(X, k)
        with pytest.raises(IndexError):
            cof_scores(X, k)


def test_fast_cof_fits_and_scores_as_pyods():
    """The detector: training scores, threshold, labels and a batch's scores."""
    rng = np.random.default_rng(3)
    for X in (
        rng.normal(size=(80, 5)),
        np.round(rng.normal(size=(40, 3))),
        rng.normal(size=(3, 2)),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours, theirs = FastCOF(n_neighbors=15).fit(X), COF(n_neighbors=15).fit(X)
            batch = np.vstack([X, X[:2] + 0.25])
            ours_batch = ours.decision_function(batch)
            theirs_batch = theirs.decision_function(batch)
        assert ours.decision_scores_.tobytes() == theirs.decision_scores_.tobytes()
        assert ours.threshold_ == theirs.threshold_
        assert np.array_equal(ours.labels_, theirs.labels_)
        assert ours_batch.tobytes() == theirs_batch.tobytes()


def test_euclidean_distances_equal_scipys_distance_matrix_above_its_threshold():
    """scipy loops over the result's columns (or rows) above a million differences: the
    blocks of rows give the same bits, on ties, repeated rows, constant columns, NaN,
    infinities and overflow, square and not."""
    from scipy.spatial import distance_matrix

    from stragglers.methods._cof_kernel import euclidean_distances

    rng = np.random.default_rng(17)
    shapes = [(330, 330, 13), (1000, 90, 12), (90, 1000, 12), (400, 400, 7), (1500, 1500, 1)]
    for trial, (m, n, k) in enumerate(shapes):
        x = rng.normal(size=(m, k)) * 10 ** rng.uniform(-3, 3, size=k)
        y = x[:n].copy() if n <= m else rng.normal(size=(n, k))
        if trial % 2 == 0:
            x = np.round(x)
            y = np.round(y)
        x[1:6] = x[0]  # repeated rows
        x[:, 0] = 2.5 if k > 1 else x[:, 0]
        x[7, -1] = np.nan
        x[8, -1] = np.inf
        x[9] *= 1e200
        for a, b in ((x, y), (x, x), (y, x)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = distance_matrix(a, b)
                ours = euclidean_distances(a, b)
            assert ours.dtype == expected.dtype and ours.shape == expected.shape
            assert ours.tobytes() == expected.tobytes(), (trial, a.shape, b.shape)
    # below the threshold (compiled) and other dtypes (scipy's own call)
    small = rng.normal(size=(10, 3))
    assert euclidean_distances(small, small).tobytes() == distance_matrix(small, small).tobytes()
    ints = np.arange(3000).reshape(1000, 3)
    assert euclidean_distances(ints, ints).tobytes() == distance_matrix(ints, ints).tobytes()


def test_compiled_distances_equal_scipys_for_every_column_count():
    """Each column count from 1 past numpy's pairwise block (eight partial sums from 8
    columns, a split beyond 128): the same bits as `distance_matrix`, whose `np.sum` of the
    squares the compiled pass reproduces, on values of mixed magnitudes (where the order of
    the additions shows), rounded values, NaN and infinities."""
    from scipy.spatial import distance_matrix

    from stragglers.methods._cof_kernel import PAIRWISE_BLOCK, _numpy_row_sum, euclidean_distances

    rng = np.random.default_rng(71)
    for k in range(1, PAIRWISE_BLOCK + 13):
        rows = int(rng.integers(1, 40))
        x = rng.normal(size=(rows, k)) * 10.0 ** rng.integers(-8, 9, size=k)
        y = rng.normal(size=(int(rng.integers(1, 25)), k)) * 10.0 ** rng.integers(-8, 9, size=k)
        if k % 3 == 0:
            x = np.round(x)
        if k % 5 == 0:
            x[0, -1] = np.nan
            y[-1, 0] = np.inf
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for a, b in ((x, y), (x, x), (y, x)):
                expected = distance_matrix(a, b)
                ours = euclidean_distances(a, b)
                assert ours.shape == expected.shape and ours.tobytes() == expected.tobytes(), k
        if k <= PAIRWISE_BLOCK:
            values = rng.random(k) * 10.0 ** rng.integers(-12, 12, size=k)
            assert _numpy_row_sum(values, k) == np.sum(values), k


def test_cof_scores_equal_pyods_at_real_job_sizes():
    """Batches above scipy's threshold (a few hundred rows of 13 features, as a long job's
    finished and running tasks)."""
    rng = np.random.default_rng(19)
    for trial in range(3):
        X = rng.normal(size=(int(rng.integers(300, 420)), 13))
        if trial == 1:
            X = np.round(X)
            X[:40] = X[0]
        for k in (5, 15):
            expected = _pyod_cof(X, k)
            assert cof_scores(X, k).tobytes() == np.asarray(expected).tobytes(), (trial, k)
