"""numpy's equal-width density histograms of every column at once, the same values.

HBOS (Goldstein & Dengel, 2012) fits one histogram per feature; XGBOD's default list holds
seven HBOS of different bin counts (Zhao & Hryniewicki, 2018, Section 3.1), so every refit
calls `np.histogram(column, bins=n, density=True)` for each feature seven times, and that
call's Python (argument checks, `linspace`, block loop, `bincount`, `diff`) costs far more
than its arithmetic at the replay's tens of rows. `density_histograms` does numpy's
arithmetic for all columns in one compiled call: the range from the column's minimum and
maximum (widened by 0.5 each way when they are equal), the edges as `np.linspace` computes
them (`i * step + start`, or `i / n * delta + start` when the step is 0, the last edge the
maximum), each value's bin as numpy's uniform-bin path finds it (scaled offset, then one
step down or up against the edges), and the density `count / width / total`. A column
whose edges do not strictly increase (numpy raises) is reported, for the caller to ask
numpy. The counts and edges alone (`uniform_bin_counts`) also serve LSCP's histograms of its
detectors' correlations (`_lscp_kernel.competent_detector_masks`). tests/test_histograms.py
checks them against `np.histogram`, value for value.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def density_histograms(X: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """For each column of X (finite float64, at least one row): `np.histogram(column,
    bins=n_bins, density=True)` as (densities, edges) columns of two arrays, and whether
    every column's edges strictly increase (else the arrays are incomplete)."""
    counts, edges, computed = uniform_bin_counts(X, n_bins)
    if not computed.all():
        return np.zeros((n_bins, X.shape[1])), edges, False
    totals = counts.sum(axis=0)
    return counts / np.diff(edges, axis=0) / totals, edges, True


def uniform_bin_counts(X: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each column of X (finite float64, at least one row): the counts and edges of
    `np.histogram(column, bins=n_bins)` as columns of two arrays, and whether the column's
    counts are computed: not where its edges do not strictly increase (numpy raises) or a
    value falls outside them. The columns' extremes are numpy's: a minimum or maximum is one value, but a
    zero one may be 0.0 or -0.0 (it becomes an edge), so a column whose extreme is zero takes
    it from the column's own `min` or `max`, as np.histogram does."""
    firsts, lasts = X.min(axis=0), X.max(axis=0)
    for c in np.flatnonzero((firsts == 0) | (lasts == 0)).tolist():
        column = X[:, c].ravel()
        firsts[c], lasts[c] = column.min(), column.max()
    return _uniform_bin_counts(X, n_bins, firsts, lasts)


@njit(cache=True)
def _uniform_bin_counts(X, n_bins, firsts, lasts):  # pragma: no cover (compiled)
    """`uniform_bin_counts` of X whose columns' extremes are `firsts` and `lasts`."""
    n_rows, n_columns = X.shape
    counts = np.zeros((n_bins, n_columns), dtype=np.intp)
    edges = np.empty((n_bins + 1, n_columns))
    computed = np.zeros(n_columns, dtype=np.bool_)
    for c in range(n_columns):
        first = firsts[c]
        last = lasts[c]
        if first == last:
            first = first - 0.5
            last = last + 0.5
        # np.linspace(first, last, n_bins + 1)
        delta = last - first
        step = delta / n_bins
        for i in range(n_bins + 1):
            if step == 0:
                edges[i, c] = (i / n_bins) * delta + first
            else:
                edges[i, c] = i * step + first
        edges[n_bins, c] = last
        increasing = True
        for i in range(n_bins):
            if not edges[i, c] < edges[i + 1, c]:
                increasing = False
        if not increasing:
            continue
        for r in range(n_rows):
            value = X[r, c]
            index = int(((value - first) / delta) * n_bins)
            if index == n_bins:
                index -= 1
            if value < edges[index, c]:
                index -= 1
            if value >= edges[index + 1, c] and index != n_bins - 1:
                index += 1
            if index < 0 or index >= n_bins:
                break
            counts[index, c] += 1
        else:
            computed[c] = True
    return counts, edges, computed
