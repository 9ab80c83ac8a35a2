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
numpy. tests/test_histograms.py checks it against `np.histogram`, value for value.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def density_histograms(X: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """For each column of X (finite float64, at least one row): `np.histogram(column,
    bins=n_bins, density=True)` as (densities, edges) columns of two arrays, and whether
    every column's edges strictly increase (else the arrays are incomplete). The columns'
    extremes are numpy's: a minimum or maximum is one value, but a zero one may be 0.0 or
    -0.0 (it becomes an edge), so a column whose extreme is zero takes it from the column's
    own `min` or `max`, as np.histogram does."""
    firsts, lasts = X.min(axis=0), X.max(axis=0)
    for c in np.flatnonzero((firsts == 0) | (lasts == 0)).tolist():
        column = X[:, c].ravel()
        firsts[c], lasts[c] = column.min(), column.max()
    return _density_histograms(X, n_bins, firsts, lasts)


@njit(cache=True)
def _density_histograms(X, n_bins, firsts, lasts):  # pragma: no cover (compiled)
    """`density_histograms` of X whose columns' extremes are `firsts` and `lasts`."""
    n_rows, n_columns = X.shape
    densities = np.zeros((n_bins, n_columns))
    edges = np.empty((n_bins + 1, n_columns))
    counts = np.zeros(n_bins, dtype=np.intp)
    column_edges = np.empty(n_bins + 1)
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
                column_edges[i] = (i / n_bins) * delta + first
            else:
                column_edges[i] = i * step + first
        column_edges[n_bins] = last
        for i in range(n_bins):
            if not column_edges[i] < column_edges[i + 1]:
                return densities, edges, False
        counts[:] = 0
        for r in range(n_rows):
            value = X[r, c]
            index = int(((value - first) / delta) * n_bins)
            if index == n_bins:
                index -= 1
            if value < column_edges[index]:
                index -= 1
            if value >= column_edges[index + 1] and index != n_bins - 1:
                index += 1
            if index < 0 or index >= n_bins:
                return densities, edges, False
            counts[index] += 1
        total = 0
        for i in range(n_bins):
            total += counts[i]
        for i in range(n_bins):
            densities[i, c] = counts[i] / (column_edges[i + 1] - column_edges[i]) / total
        for i in range(n_bins + 1):
            edges[i, c] = column_edges[i]
    return densities, edges, True
