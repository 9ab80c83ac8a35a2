"""Compiled replacements for two of PyOD's slow inner loops, same numbers as PyOD's own.

- SOS's affinity search (`SOS._d2a`) runs a bisection per row in Python, calling a small
  numba function up to dozens of times a row: at the replay's batch sizes that Python loop is
  most of SOS's cost. `sos_affinities` runs the same bisection, calling the same numba
  function with the same arguments, inside one compiled loop.
- SOD's shared-neighbour count (`_snn_imp`) builds a Python-style set for every pair of
  rows, and PyOD compiles it with `parallel=True` in every process (seconds of compilation
  per job; threads beyond the job's one core). `snn_reference_sets` counts the shared
  neighbours with a membership array and keeps the same `np.argsort` (numba's, so ties fall
  the same way).

Both are compiled with `cache=True`: a process after the first loads them from numba's cache
instead of compiling. `FastSOS` and `FastSOD` are PyOD's detectors with these loops swapped
in; everything else (distances, neighbours, scores, thresholds) is PyOD's.
`cache_pyod_compilation` lets numba cache PyOD's other compiled functions the same way.
tests/test_pyod_kernels.py checks them against PyOD's loops, value for value.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit
from pyod.models.sod import SOD as PyodSOD
from pyod.models.sos import SOS as PyodSOS
from pyod.models.sos import _get_perplexity
from sklearn.neighbors import NearestNeighbors

UINT32_MAX = np.iinfo(np.uint32).max


@njit(cache=True)
def sos_affinities(D, perplexity, eps):  # pragma: no cover (compiled)
    """PyOD's `SOS._d2a` on the dissimilarity matrix D: per row, bisect the Gaussian's
    precision until the row's perplexity is within eps of `perplexity` (at most 5,000
    steps), with the same arithmetic and the same `_get_perplexity` calls."""
    n = D.shape[0]
    A = np.zeros((n, n))
    log_u = np.log(perplexity)
    row = np.empty(n - 1)
    beta = np.ones(1)
    for i in range(n):
        for j in range(i):
            row[j] = D[i, j]
        for j in range(i + 1, n):
            row[j - 1] = D[i, j]
        beta[0] = 1.0
        beta_min = -np.inf
        beta_max = np.inf
        H, this_a = _get_perplexity(row, beta)
        h_diff = H[0] - log_u
        tries = 0
        while (np.isnan(h_diff) or np.abs(h_diff) > eps) and tries < 5000:
            if np.isnan(h_diff):
                beta[0] = beta[0] / 10.0
            elif h_diff > 0:
                beta_min = beta[0]
                if beta_max == np.inf or beta_max == -np.inf:
                    beta[0] = beta[0] * 2.0
                else:
                    beta[0] = (beta[0] + beta_max) / 2.0
            else:
                beta_max = beta[0]
                if beta_min == np.inf or beta_min == -np.inf:
                    beta[0] = beta[0] / 2.0
                else:
                    beta[0] = (beta[0] + beta_min) / 2.0
            H, this_a = _get_perplexity(row, beta)
            h_diff = H[0] - log_u
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


class FastSOD(PyodSOD):
    """PyOD's SOD with the shared-neighbour count compiled (`snn_reference_sets`)."""

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
