"""COF's chaining distances without PyOD's per-neighbour Python loop, same numbers as PyOD's.

PyOD's fast COF (`COF._cof_fast`) walks, for every row, its set-based nearest path (Tang et
al., 2002, section 3): for the path's (j+1)-th point it gathers that point's whole row of the
distance matrix in path order and takes the minimum over the first j+1 entries, one numpy
call per row and neighbour. At the replay's batch sizes those calls are most of COF's cost.
`cof_scores` gathers, per row, only the k x k block of the distance matrix the minima read
and takes them in one reduction (a minimum is exact whatever the order, NaN included). The
rest is PyOD's arithmetic in PyOD's order: scipy's `distance_matrix` (`euclidean_distances`:
one compiled pass over the pairs of finite rows at most 128 wide, else blocks of rows rather
than column by column), the same `np.argsort` of each row (a 2-D argsort sorts each row by
the same routine, so ties fall the same way),
the same weights, and each row's weighted costs and neighbours' average chaining distances
summed by numpy's own reduction over a row of the same length.
tests/test_cof_kernel.py checks it against PyOD's `_cof_fast`, value for value.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from pyod.models.cof import COF as PyodCOF
from scipy.spatial import distance_matrix

# scipy's `distance_matrix` computes at most this many differences at once, else loops
SCIPY_DISTANCE_THRESHOLD = 1000000
ROWS_PER_BLOCK = 16  # the block's differences stay in the processor's cache
# numpy's pairwise summation adds a contiguous run of at most this many values by eight
# partial sums (its PW_BLOCKSIZE); longer rows are split in two first
PAIRWISE_BLOCK = 128


@njit(cache=True)
def _numpy_row_sum(values, count):  # pragma: no cover (compiled)
    """numpy's `np.sum` of `values[:count]` (count <= PAIRWISE_BLOCK), a contiguous float64
    run reduced on its own, as its pairwise summation adds it: below eight values one after
    the other from zero; else eight partial sums over strides of eight, combined as
    ((0+1)+(2+3))+((4+5)+(6+7)), the remainder added after, the total added to zero."""
    if count < 8:
        total = 0.0
        for i in range(count):
            total += values[i]
        return total
    r0 = values[0]
    r1 = values[1]
    r2 = values[2]
    r3 = values[3]
    r4 = values[4]
    r5 = values[5]
    r6 = values[6]
    r7 = values[7]
    whole = count - count % 8
    for i in range(8, whole, 8):
        r0 += values[i]
        r1 += values[i + 1]
        r2 += values[i + 2]
        r3 += values[i + 3]
        r4 += values[i + 4]
        r5 += values[i + 5]
        r6 += values[i + 6]
        r7 += values[i + 7]
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(whole, count):
        total += values[i]
    return 0.0 + total


@njit(cache=True)
def _compiled_distance_matrix(x, y):  # pragma: no cover (compiled)
    """`distance_matrix(x, y)`'s values for finite float64 rows of at most PAIRWISE_BLOCK columns:
    per pair the same |y - x| squared per column, numpy's sum of them (`_numpy_row_sum`) and
    the square root, without the (rows, rows, columns) temporaries."""
    n_x, n_columns = x.shape
    n_y = y.shape[0]
    result = np.empty((n_x, n_y))
    squares = np.empty(n_columns)
    for i in range(n_x):
        for j in range(n_y):
            for column in range(n_columns):
                difference = abs(y[j, column] - x[i, column])
                squares[column] = difference * difference
            result[i, j] = np.sqrt(_numpy_row_sum(squares, n_columns))
    return result


def euclidean_distances(x, y) -> np.ndarray:
    """scipy's `distance_matrix(x, y)` for float64 matrices: above its threshold scipy calls
    `minkowski_distance` once per column of the result, in Python, each call making four
    temporary arrays. Finite rows of at most PAIRWISE_BLOCK columns go through one compiled pass
    (`_compiled_distance_matrix`), wider ones through blocks of rows in one buffer: the same
    operations (the differences y - x, their absolute values squared, numpy's sum over each
    row of the same length, the square root), giving the same bits."""
    x = np.asarray(x)
    y = np.asarray(y)
    if (
        x.ndim == 2
        and y.ndim == 2
        and x.dtype == np.float64
        and y.dtype == np.float64
        and x.shape[1] == y.shape[1]
        and 1 <= x.shape[1] <= PAIRWISE_BLOCK
        # a NaN's sign bit is numpy's own (LLVM may fold |d| * |d| into d * d); COF's input
        # is finite (PyOD's check), so non-finite rows stay on numpy's path
        and np.isfinite(x).all()
        and np.isfinite(y).all()
    ):
        return _compiled_distance_matrix(x, y)
    if not (
        x.ndim == 2
        and y.ndim == 2
        and x.dtype == np.float64
        and y.dtype == np.float64
        and x.shape[1] == y.shape[1]
        and len(x) * len(y) * x.shape[1] > SCIPY_DISTANCE_THRESHOLD
    ):
        return distance_matrix(x, y)
    result = np.empty((len(x), len(y)), dtype=float)
    buffer = np.empty((ROWS_PER_BLOCK, len(y), x.shape[1]))
    for start in range(0, len(x), ROWS_PER_BLOCK):
        block = x[start : start + ROWS_PER_BLOCK]
        differences = buffer[: len(block)]
        np.subtract(y[None, :, :], block[:, None, :], out=differences)
        np.abs(differences, out=differences)
        np.square(differences, out=differences)
        np.sqrt(np.sum(differences, axis=-1), out=result[start : start + ROWS_PER_BLOCK])
    return result


def cof_scores(X, n_neighbors: int) -> np.ndarray:
    """PyOD's `COF._cof_fast(X)` with `n_neighbors_ = n_neighbors`: every row's COF
    against the rows of X (NaN scores zero, infinite ones the largest float, as PyOD's)."""
    dist = np.array(euclidean_distances(X, X))
    n = dist.shape[0]
    k = int(n_neighbors)
    if n == 0:
        return np.nan_to_num(np.zeros(0))
    if k >= n:  # PyOD's loop indexes past the row's path
        raise IndexError(f"index {n} is out of bounds for axis 0 with size {n}")
    path = np.argsort(dist, axis=1)
    neighbours = path[:, 1 : k + 1]
    # block[i, j, m]: distance from row i's (j+1)-th path point to its m-th; PyOD's cost of
    # step j is the minimum over m <= j
    block = dist[neighbours[:, :, None], path[:, None, :k]]
    block[:, np.triu(np.ones((k, k), dtype=bool), 1)] = np.inf
    cost = np.min(block, axis=2)
    k_plus_1 = k + 1
    weights = np.array([(2.0 * (k_plus_1 - (h + 1))) / (k_plus_1 * k) for h in range(k)])
    ac_dist = np.sum(weights * cost, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cof = (ac_dist * k) / np.sum(ac_dist[neighbours], axis=1)
    return np.nan_to_num(cof)


class FastCOF(PyodCOF):
    """PyOD's COF with the fast method's chaining distances computed by `cof_scores`."""

    def _cof_fast(self, X):
        return cof_scores(X, self.n_neighbors_)
