"""The compiled SOS and SOD loops (stragglers/methods/_pyod_kernels.py) give PyOD's numbers,
bit for bit, on data with and without ties."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from neighbour_samples import varied_rows
from sklearn.neighbors import NearestNeighbors

from stragglers.methods._pyod_kernels import (
    FastSOD,
    FastSOS,
    snn_reference_sets,
    sos_affinities,
)


def _samples():
    """Rows as the replay's batches look: continuous, rounded (many ties), a constant column
    and duplicated rows, small and large."""
    rng = np.random.default_rng(7)
    rounded = np.round(rng.normal(size=(60, 4)))
    constant = rng.normal(size=(25, 5))
    constant[:, 2] = 1.0
    constant[4] = constant[3]
    return {
        "continuous": rng.normal(size=(120, 6)),
        "rounded": rounded,
        "constant_column": constant,
        "tiny": rng.normal(size=(3, 2)),
        "pair": rng.normal(size=(2, 3)),
        "real_job_size": varied_rows(rng, 20, 330, 13),  # repeated rows, a constant column
        "far_apart": rng.normal(size=(40, 3)) * 1e3,  # affinities underflow: NaN steps
        "all_equal": np.ones((6, 2)),
    }


@pytest.mark.parametrize("name", list(_samples()))
def test_sos_affinities_equal_pyods(name):
    """Same affinity matrix as PyOD's Python bisection, and the same scores."""
    from pyod.models.sos import SOS

    X = _samples()[name]
    D = SOS()._x2d(X)
    expected = SOS()._d2a(D)
    assert sos_affinities(np.ascontiguousarray(D), 4.5, 1e-5).tobytes() == expected.tobytes()
    assert FastSOS()._d2a(D).tobytes() == expected.tobytes()
    ours, theirs = FastSOS().fit(X), SOS().fit(X)
    assert ours.decision_scores_.tobytes() == theirs.decision_scores_.tobytes()
    assert np.array_equal([ours.threshold_], [theirs.threshold_], equal_nan=True)


def test_row_perplexity_equals_pyods_get_perplexity():
    """Each bisection step's perplexity and affinity row, bit for bit: rows of squared
    distances (ties, zeros, far apart) at the precisions the bisection visits (halved,
    doubled, tenths, extreme)."""
    from pyod.models.sos import _get_perplexity

    from stragglers.methods._pyod_kernels import _row_perplexity

    rng = np.random.default_rng(9)
    rows = [
        rng.exponential(size=int(rng.integers(1, 400))) * 10 ** rng.uniform(-3, 3)
        for _ in range(200)
    ]
    rows += [
        np.round(rng.exponential(size=50)),
        np.zeros(7),
        np.full(5, 1e6),
        np.array([0.0, 1e300]),
    ]
    betas = [1.0, 0.5, 2.0, 0.1, 1e-3, 3.7, 1e3, 1e-300, 1e300, 0.0]
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in rows:
            for beta in betas + list(rng.uniform(0, 10, size=5)):
                expected_h, expected_a = _get_perplexity(row, np.array([beta]))
                affinities = np.empty_like(row)
                h = _row_perplexity(row, float(beta), affinities)
                assert np.float64(h).tobytes() == expected_h[0].tobytes(), (len(row), beta)
                assert affinities.tobytes() == expected_a.tobytes()
                checked += 1
    assert checked > 3000


def test_snn_reference_sets_equal_pyods():
    """Same reference sets, ties ordered the same way, and the same SOD scores (one test:
    PyOD compiles its parallel loop once per process, seconds of it)."""
    from pyod.models.sod import SOD, _snn_imp

    for name in ("continuous", "rounded", "constant_column"):
        X = _samples()[name]
        k = min(20, len(X) - 2)
        ind = NearestNeighbors(n_neighbors=k).fit(X).kneighbors(return_distance=False)
        expected = _snn_imp(ind, 10)
        ours = snn_reference_sets(ind, 10)
        assert ours.dtype == expected.dtype, name
        assert np.array_equal(ours, expected), name
        fast = FastSOD(n_neighbors=k, ref_set=10).fit(X)
        slow = SOD(n_neighbors=k, ref_set=10).fit(X)
        assert fast.decision_scores_.tobytes() == slow.decision_scores_.tobytes(), name
        batch = np.vstack([X, X[:5] + 0.5])
        assert fast.decision_function(batch).tobytes() == slow.decision_function(batch).tobytes()


def test_sod_scores_equal_pyods_loop():
    """Same scores as PyOD's per-row loop, bit for bit, given the same reference sets: ties,
    duplicated rows, constant columns, no relevant dimension, one column and many (the dot
    product's lengths), reference sets up to n_neighbors - 1 and n_neighbors up to n - 1."""
    from pyod.models.sod import SOD

    from stragglers.methods._pyod_kernels import sod_scores, sod_subspaces

    rng = np.random.default_rng(13)
    for trial in range(200):
        rows, columns = int(rng.integers(4, 90)), int(rng.integers(1, 70))
        X = rng.normal(size=(rows, columns)) * 10 ** rng.uniform(-3, 3, size=columns)
        if trial % 3 == 0:
            X = np.round(X)
        if trial % 4 == 0:
            X[:, 0] = 1.0
        if trial % 5 == 0:
            X[1 : rows // 2] = X[0]  # many equal rows: zero variance everywhere
        if trial % 7 == 0:
            X = np.ones((rows, columns))
        n_neighbors = int(rng.integers(3, rows))
        ref_set = int(rng.integers(2, n_neighbors))
        alpha = float(rng.choice([0.8, 0.3, 0.999]))
        ind = NearestNeighbors(n_neighbors=n_neighbors).fit(X).kneighbors(return_distance=False)
        reference_sets = snn_reference_sets(ind, ref_set)
        pyod_sod = SOD(n_neighbors=n_neighbors, ref_set=ref_set, alpha=alpha)
        pyod_sod._snn = lambda X, sets=reference_sets: sets
        expected = pyod_sod._sod(X)
        ours = sod_scores(X, reference_sets, ref_set, alpha)
        assert ours.dtype == expected.dtype
        assert ours.tobytes() == expected.tobytes(), trial
        # the steps before the scores, as PyOD's loop computes them for each row (the bound
        # reaches the scores only through a comparison: checked here on its own)
        means, var_expect, relevant = sod_subspaces(X, reference_sets, ref_set, alpha)
        for i in range(rows):
            reference = X[reference_sets[i,],]
            row_means = np.mean(reference, axis=0)
            var_total = np.sum(np.sum(np.square(reference - row_means))) / ref_set
            row_expect = alpha * var_total / columns
            assert means[i].tobytes() == row_means.tobytes(), trial
            assert var_expect[i].tobytes() == np.float64(row_expect).tobytes(), trial
            assert np.array_equal(relevant[i], np.var(reference, axis=0) < row_expect), trial


def _abod_points():
    """Training sets and query points for ABOD's angles: continuous, rounded (ties), with
    duplicated rows and query points equal to training rows (pairs skipped, up to every pair
    of a point: no angle at all), a constant column, NaN in a query point."""
    rng = np.random.default_rng(19)
    for trial in range(60):
        rows, columns = int(rng.integers(3, 60)), int(rng.integers(1, 8))
        train = varied_rows(rng, trial, rows, columns)
        queries = np.vstack([rng.normal(size=(5, columns)), train[:4]])
        if trial % 6 == 0:
            queries[0, 0] = np.nan
        yield trial, train, queries, int(rng.integers(1, rows))


def test_angle_variance_equals_pyods_calculate_wocs():
    """Value for value against PyOD's `_calculate_wocs`, on every query point's neighbours
    and on arbitrary index lists (repeats, every row)."""
    from pyod.models.abod import _calculate_wocs

    from stragglers.methods._pyod_kernels import angle_variance

    rng = np.random.default_rng(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the variance of no angle: NaN
        for trial, train, queries, k in _abod_points():
            ind = NearestNeighbors(n_neighbors=k).fit(train).kneighbors(np.nan_to_num(queries))[1]
            for point, neighbours in zip(queries, ind):
                expected = np.float64(_calculate_wocs(point, train, neighbours))
                ours = np.float64(angle_variance(point, train, neighbours))
                assert ours.tobytes() == expected.tobytes(), trial
            # the point's own row anywhere in the list, not only first as a kNN query puts it
            chosen = rng.integers(0, len(train), size=int(rng.integers(0, 9)))
            chosen = np.insert(chosen, int(rng.integers(0, len(chosen) + 1)), 0)
            for point in (queries[1], train[0]):
                expected = np.float64(_calculate_wocs(point, train, chosen))
                ours = np.float64(angle_variance(point, train, chosen))
                assert ours.tobytes() == expected.tobytes(), trial


def test_angle_variances_equal_pyods_calculate_wocs_row_by_row():
    """All points at once, value for value against PyOD's per-point `_calculate_wocs`: every
    neighbourhood size, points with no angle (NaN), NaN points, a real job's size."""
    from pyod.models.abod import _calculate_wocs

    from stragglers.methods._pyod_kernels import angle_variances

    rng = np.random.default_rng(7)
    cases = list(_abod_points())
    big = varied_rows(rng, 5, 330, 13)
    cases.append((99, big, np.vstack([big, rng.normal(size=(20, 13))]), 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for trial, train, queries, k in cases:
            every = len(train) <= 60  # PyOD's pair loop over n - 1 neighbours: small n only
            for k_used in sorted({1, k, len(train) - 1} if every else {k}):
                ind = NearestNeighbors(n_neighbors=k_used).fit(train)
                ind = ind.kneighbors(np.nan_to_num(queries))[1]
                expected = np.array([_calculate_wocs(p, train, i) for p, i in zip(queries, ind)])
                ours = angle_variances(queries, train, ind)
                assert ours.tobytes() == expected.astype(np.float64).tobytes(), (trial, k_used)
        # other dtypes: PyOD's own function, row by row
        small = rng.normal(size=(40, 4)).astype(np.float32)
        ind = NearestNeighbors(n_neighbors=5).fit(small).kneighbors(small[:5])[1]
        expected = np.array([_calculate_wocs(p, small, i) for p, i in zip(small[:5], ind)])
        ours = angle_variances(small[:5], small, ind)
        assert not np.isnan(expected).any() and ours.tobytes() == expected.tobytes()


def test_fast_abod_equals_pyods():
    """Training scores, threshold and query scores of the detector, PyOD's functions back
    in place afterwards."""
    import pyod.models.abod as pyod_abod

    from stragglers.methods._pyod_kernels import FastABOD

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for trial, train, queries, k in _abod_points():
            queries = np.nan_to_num(queries)
            ours = FastABOD(n_neighbors=k, method="fast").fit(train)
            theirs = pyod_abod.ABOD(n_neighbors=k, method="fast").fit(train)
            assert ours.decision_scores_.tobytes() == theirs.decision_scores_.tobytes(), trial
            assert ours.threshold_ == theirs.threshold_ or (
                np.isnan(ours.threshold_) and np.isnan(theirs.threshold_)
            )
            expected = theirs.decision_function(queries)
            assert ours.decision_function(queries).tobytes() == expected.tobytes(), trial
    assert pyod_abod._calculate_wocs.__module__ == "pyod.models.abod"
