"""Replacements for four of PyOD's slow inner loops, same numbers as PyOD's own.

- SOS's affinity search (`SOS._d2a`) runs a bisection per row in Python, calling a small
  numba function up to dozens of times a row: at the replay's batch sizes that Python loop is
  most of SOS's cost. `sos_affinities` runs the same bisection inside one compiled loop,
  each step's perplexity by the same arithmetic as that numba function, in one buffer.
- SOD's shared-neighbour count (`_snn_imp`) builds a Python-style set for every pair of
  rows, and PyOD compiles it with `parallel=True` in every process (seconds of compilation
  per job; threads beyond the job's one core). `snn_reference_sets` counts the shared
  neighbours with a membership array and keeps the same `np.argsort` (numba's, so ties fall
  the same way).
- ABOD's angle variance of a point (`_calculate_wocs`, fast ABOD) checks every pair of its
  neighbours with two `np.array_equal` calls and one call of PyOD's compiled `_wcos`, from
  Python. `weighted_cosines` runs the same pair loop, calling the same `_wcos`, compiled;
  `angle_variance` takes numpy's `np.var` of the same values, as PyOD does.
  `angle_variances` does so for every point of PyOD's loop over points in one compiled
  call, and numpy's variance of all points with as many values in one call (FastABOD).
- SOD's scores (`SOD._sod`, Kriegel et al., 2009, section 3) loop over rows in Python, a
  dozen numpy calls per row on its small reference set. `sod_scores` does the same
  arithmetic for all rows at once: each row's column means and variances by the same
  reduction over its reference rows, its total variance by the same sum over the reference
  set's contiguous entries, its distance in the relevant subspace by the same dot product.

The compiled ones have `cache=True`: a process after the first loads them from numba's cache
instead of compiling. `FastSOS`, `FastABOD` and `FastSOD` are PyOD's detectors with these
loops swapped in; everything else (distances, neighbours, thresholds) is PyOD's.
`cache_pyod_compilation` lets numba cache PyOD's other compiled functions the same way.
tests/test_pyod_kernels.py checks them against PyOD's loops, value for value.
"""

from __future__ import annotations

import functools

import numpy as np
import pyod.models.abod as pyod_abod
from numba import njit
from pyod.models.sod import SOD as PyodSOD
from pyod.models.sos import SOS as PyodSOS
from sklearn.neighbors import NearestNeighbors

from stragglers.methods._library_swap import swapped_attributes

UINT32_MAX = np.iinfo(np.uint32).max


# numpy's division: 0 / 0 and x / 0 give NaN and infinities, as PyOD's array division does
@njit(cache=True, error_model="numpy")
def _row_perplexity(row, beta, affinities):  # pragma: no cover (compiled)
    """PyOD's `_get_perplexity(row, beta)` for a float beta, its affinity row written into
    `affinities`: each exp(-d * beta) as numba's `np.exp` of the array computes it, the two
    sums in the same sequential order as numba's `ndarray.sum`, the same final expression;
    without its three temporary arrays."""
    total = 0.0
    for j in range(row.shape[0]):
        affinities[j] = np.exp(-row[j] * beta)
        total += affinities[j]
    weighted = 0.0
    for j in range(row.shape[0]):
        weighted += row[j] * affinities[j]
    return np.log(total) + beta * weighted / total


@njit(cache=True)
def sos_affinities(D, perplexity, eps):  # pragma: no cover (compiled)
    """PyOD's `SOS._d2a` on the dissimilarity matrix D: per row, bisect the Gaussian's
    precision until the row's perplexity is within eps of `perplexity` (at most 5,000
    steps), with the same arithmetic as its `_get_perplexity` calls (`_row_perplexity`)."""
    n = D.shape[0]
    A = np.zeros((n, n))
    log_u = np.log(perplexity)
    row = np.empty(n - 1)
    this_a = np.empty(n - 1)
    for i in range(n):
        for j in range(i):
            row[j] = D[i, j]
        for j in range(i + 1, n):
            row[j - 1] = D[i, j]
        beta = 1.0
        beta_min = -np.inf
        beta_max = np.inf
        h_diff = _row_perplexity(row, beta, this_a) - log_u
        tries = 0
        while (np.isnan(h_diff) or np.abs(h_diff) > eps) and tries < 5000:
            if np.isnan(h_diff):
                beta = beta / 10.0
            elif h_diff > 0:
                beta_min = beta
                if beta_max == np.inf or beta_max == -np.inf:
                    beta = beta * 2.0
                else:
                    beta = (beta + beta_max) / 2.0
            else:
                beta_max = beta
                if beta_min == np.inf or beta_min == -np.inf:
                    beta = beta / 2.0
                else:
                    beta = (beta + beta_min) / 2.0
            h_diff = _row_perplexity(row, beta, this_a) - log_u
            tries += 1
        for j in range(i):
            A[i, j] = this_a[j]
        for j in range(i + 1, n):
            A[i, j] = this_a[j - 1]
    return A


@njit(cache=True)
def snn_reference_sets(ind, ref_set):  # pragma: no cover (compiled)
    """PyOD's `_snn_imp`: for each row of the kNN index matrix `ind`, the `ref_set` rows
    sharing the most neighbours with it (itself excluded), in the order of numba's
    `np.argsort` of the counts, as PyOD's loop orders them."""
    n = ind.shape[0]
    k = ind.shape[1]
    count = np.zeros((n, ref_set), dtype=np.uint32)
    member = np.zeros(n, dtype=np.bool_)
    shared = np.empty(n, dtype=np.uint32)
    for i in range(n):
        for m in range(k):
            member[ind[i, m]] = True
        for j in range(n):
            c = 0
            for m in range(k):
                if member[ind[j, m]]:
                    c += 1
            shared[j] = c
        shared[i] = UINT32_MAX
        count[i] = np.argsort(shared)[::-1][1 : ref_set + 1]
        for m in range(k):
            member[ind[i, m]] = False
    return count


@njit(cache=True)
def _same_point(a, b):  # pragma: no cover (compiled)
    """`np.array_equal(a, b)` for two 1-D arrays of the same length (NaN never equal)."""
    for j in range(a.shape[0]):
        if a[j] != b[j]:
            return False
    return True


@njit(cache=True)
def weighted_cosines(curr_pt, X, X_ind):  # pragma: no cover (compiled)
    """The values PyOD's `_calculate_wocs` puts in its list: for each pair of the rows of X
    indexed by X_ind, in `itertools.combinations` order, PyOD's `_wcos` of the angle at
    curr_pt, skipping pairs with a row equal to curr_pt."""
    k = X_ind.shape[0]
    found = np.empty(max(k * (k - 1) // 2, 0))
    n_found = 0
    for p in range(k):
        a = X[X_ind[p], :]
        for q in range(p + 1, k):
            b = X[X_ind[q], :]
            if _same_point(a, curr_pt) or _same_point(b, curr_pt):
                continue
            found[n_found] = pyod_abod._wcos(curr_pt, a, b)
            n_found += 1
    return found[:n_found]


def _compiled_angle_inputs(points, X, neighbours, ndim: int) -> bool:
    """Whether the compiled functions take these: float64 points (a row, ndim 1, or rows)
    of X's width, float64 X, integer neighbour indices of the points' ndim."""
    return (
        type(points) is np.ndarray
        and type(X) is np.ndarray
        and type(neighbours) is np.ndarray
        and points.dtype == np.float64
        and X.dtype == np.float64
        and neighbours.dtype.kind == "i"
        and points.ndim == ndim
        and X.ndim == 2
        and neighbours.ndim == ndim
        and points.shape[-1] == X.shape[1]
    )


def angle_variance(curr_pt, X, X_ind):
    """PyOD's `_calculate_wocs`: numpy's variance of `weighted_cosines` (NaN for none);
    arrays other than float64 ones of the expected shapes go to PyOD's own."""
    if not _compiled_angle_inputs(curr_pt, X, X_ind, 1):
        return _PYOD_CALCULATE_WOCS(curr_pt, X, X_ind)
    return np.var(weighted_cosines(curr_pt, X, X_ind))


_PYOD_CALCULATE_WOCS = pyod_abod._calculate_wocs


@njit(cache=True)
def _weighted_cosine_rows(points, X, neighbours):  # pragma: no cover (compiled)
    """`weighted_cosines(points[i], X, neighbours[i])` of every row i, side by side (row i's
    first lengths[i] entries), and the lengths."""
    n, k = neighbours.shape
    values = np.zeros((n, max(k * (k - 1) // 2, 0)))
    lengths = np.zeros(n, dtype=np.int64)
    for i in range(n):
        found = weighted_cosines(points[i], X, neighbours[i])
        values[i, : found.shape[0]] = found
        lengths[i] = found.shape[0]
    return values, lengths


def angle_variances(points, X, neighbours) -> np.ndarray:
    """`angle_variance(points[i], X, neighbours[i])` of every row i: the weighted cosines of
    all rows in one compiled call, and numpy's variance of the rows with as many values at
    once (the same reduction over each row of that length as over a 1-D array)."""
    if not (_compiled_angle_inputs(points, X, neighbours, 2) and len(points) == len(neighbours)):
        return np.array([angle_variance(p, X, ind) for p, ind in zip(points, neighbours)])
    values, lengths = _weighted_cosine_rows(points, X, neighbours)
    variances = np.empty(len(points))
    for length in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == length)
        if length == 0:
            variances[rows] = np.var(np.zeros(0))  # NaN, numpy's warning
        else:
            variances[rows] = np.var(np.ascontiguousarray(values[rows, :length]), axis=1)
    return variances


class _DeferredAngleVariances:
    """A stand-in for PyOD's `_calculate_wocs` that keeps each call's point and neighbours
    and answers 0; `variances()` then gives every call's true value at once."""

    def __init__(self):
        self.calls = []

    def __call__(self, curr_pt, X, X_ind):
        self.calls.append((curr_pt, X, X_ind))
        return 0.0

    def variances(self) -> np.ndarray:
        if not self.calls:
            return np.zeros(0)
        data = self.calls[0][1]
        if any(call[1] is not data for call in self.calls):
            return np.array([angle_variance(*call) for call in self.calls])
        points = np.array([call[0] for call in self.calls])
        neighbours = np.array([call[2] for call in self.calls])
        return angle_variances(points, data, neighbours)


def sod_subspaces(X, reference_sets, ref_set, alpha):
    """PyOD's `SOD._sod` up to the subspaces, for every row of X given its reference set
    (a row of indices): the set's column means, the variance bound (`alpha` times the set's
    mean variance) and which columns vary less than it (the relevant subspace)."""
    n_rows, n_columns = X.shape
    reference = X[reference_sets]  # (rows, reference rows, columns)
    means = np.mean(reference, axis=1)  # as np.mean(X[set], axis=0) for each row
    squares = np.square(reference - means[:, None, :])
    # PyOD sums each set's squares as one contiguous block: a row of the reshaped array
    var_total = np.sum(squares.reshape(n_rows, -1), axis=1) / ref_set
    var_expect = alpha * var_total / n_columns
    relevant = np.var(reference, axis=1) < var_expect[:, None]
    return means, var_expect, relevant


def sod_scores(X, reference_sets, ref_set, alpha) -> np.ndarray:
    """PyOD's `SOD._sod` scores of the rows of X given their reference sets: the distance to
    the set's mean in the relevant subspace (`sod_subspaces`), 0 where it is empty."""
    means, _, relevant = sod_subspaces(X, reference_sets, ref_set, alpha)
    rel_dim = np.sum(relevant, axis=1)
    # PyOD's np.dot of the 0/1 list with the squares: both as float64, the same dot product
    distance = np.vecdot(relevant.astype(np.float64), np.square(X - means), axis=-1)
    scores = np.zeros(shape=(X.shape[0],))
    found = rel_dim != 0
    scores[found] = np.sqrt(distance[found] / rel_dim[found])
    return scores


@functools.cache
def cache_pyod_compilation() -> None:
    """Let numba keep PyOD's own compiled functions (HBOS's scores, ABOD's weighted cosine,
    CBLOF's row-wise distances) in its on-disk cache: PyOD compiles them without a cache, in
    every process that uses them (about 2 CPU-s for HBOS's, paid by every HBOS and XGBOD
    job). The compiled code is the same, only where it comes from changes. Called before
    their first use."""
    from pyod.models import abod, hbos
    from pyod.utils import stat_models

    for dispatcher in (
        hbos._calculate_outlier_scores,
        abod._wcos,
        stat_models._pairwise_distances_no_broadcast_helper,
    ):
        dispatcher.enable_caching()


class FastSOS(PyodSOS):
    """PyOD's SOS with the affinity search compiled (`sos_affinities`)."""

    def _d2a(self, D):
        return sos_affinities(
            np.ascontiguousarray(D, dtype=np.float64), float(self.perplexity), self.eps
        )


class FastABOD(pyod_abod.ABOD):
    """PyOD's ABOD with each point's angle variance from `angle_variance` (fast method)."""

    # PyOD's loops over rows run with `_DeferredAngleVariances` for `_calculate_wocs`: the
    # variances are then computed together and put where PyOD's loop put each

    def _fit_fast(self):
        deferred = _DeferredAngleVariances()
        with swapped_attributes(pyod_abod, _calculate_wocs=deferred):
            super()._fit_fast()
        self.decision_scores_[:, 0] = deferred.variances()
        return self

    def _decision_function_fast(self, X):
        deferred = _DeferredAngleVariances()
        with swapped_attributes(pyod_abod, _calculate_wocs=deferred):
            scores = super()._decision_function_fast(X)
        scores[:] = deferred.variances()
        return scores


class FastSOD(PyodSOD):
    """PyOD's SOD with the shared-neighbour count compiled (`snn_reference_sets`) and the
    scores of all rows at once (`sod_scores`)."""

    def _sod(self, X):
        return sod_scores(X, self._snn(X), self.ref_set, self.alpha)

    def _snn(self, X):
        knn = NearestNeighbors(
            n_neighbors=self.n_neighbors,
            algorithm=self.algorithm,
            leaf_size=self.leaf_size,
            metric=self.metric,
            p=self.p,
            metric_params=self.metric_params,
            n_jobs=self.n_jobs,
        )
        knn.fit(X)
        ind = knn.kneighbors(return_distance=False)
        return snn_reference_sets(ind, self.ref_set)
