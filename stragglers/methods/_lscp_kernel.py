"""LSCP's per-test-row work without per-call overhead or Python loops, same numbers as PyOD's.

PyOD's LSCP scores each test row by correlating, over the row's local region, the training
rows' pseudo ground truth with each base detector's scores: one `scipy.stats.pearsonr` call
per row and detector. scipy's call validates its arguments, picks an array namespace and
computes a p-value (a beta distribution) that LSCP throws away: most of LSCP's time at the
replay's batch sizes. `pearson_statistics` computes only the coefficient, for one pair per
row, with the same numpy operations in the same order as scipy's `pearsonr` on 1-D arrays
(mean, centring, the max-scaled norm, `vecdot`, clip, rounding for two points; NaN for a
constant input), each row reduced by the same numpy reduction as a 1-D array, so the values
are the same bits; `pearson_statistic` is its one-pair form, scipy's signature.
`top_n_indices` is PyOD's `argmaxn` (the largest histogram bins) without scikit-learn's
input validation of a 1-D array at each call, the other large share.

`FastLSCP` is PyOD's detector with its per-test-row loop (Zhao et al., 2019, section 3.3)
done for all rows at once, same operations in the same order:
- the local regions (`LSCP._get_local_region`): the same feature draws from the detector's
  random state; each draw's k nearest training rows, the KD-tree's answer, read off the
  distances the tree computes where they are all different (`nearest_neighbours`; the
  distances and each row's smallest by compiled passes, `squared_distances` and
  `smallest_distances`, numpy's partition where they tie), the tree
  asked (without scikit-learn's validation of its already validated input,
  `_validated_tree_inputs`) for rows with tied distances; a refit's training rows found
  among the last fit's nearest and the new rows (`NeighbourTables`: the replay refits on
  the same rows plus new ones, with the same draws); the neighbours kept (met more than the
  threshold's times, in order of first meeting) are counted by a compiled loop
  (`frequent_neighbours`) instead of a Counter per row;
- the correlations (`pearson_statistics`): every region of one length at once;
- the competent detectors (`LSCP._get_competent_detectors`): `np.histogram`'s bin edges and
  bin indices for every row at once (`competent_detector_masks`, numpy's uniform bins from
  `_histograms.uniform_bin_counts`), the largest bins and the scores inside them; a row whose
  histogram numpy refuses (too narrow a range, non-finite scores) goes through PyOD's own
  function;
- the score: the mean of the competent detectors' scores, rows grouped by their detectors.
tests/test_lscp_kernel.py checks each against scipy's, numpy's and PyOD's, value for value.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pyod.models.lscp as pyod_lscp
import sklearn.neighbors._kd_tree as sklearn_kd_tree
from numba import njit
from pyod.utils.utility import argmaxn as pyod_argmaxn
from pyod.utils.utility import generate_bagging_indices, standardizer
from scipy import stats
from sklearn.neighbors import KDTree
from sklearn.preprocessing._data import _handle_zeros_in_scale, _is_constant_feature
from sklearn.utils.extmath import _incremental_mean_and_var

from stragglers.methods._histograms import uniform_bin_counts
from stragglers.methods._library_swap import swapped_attributes


def pearson_statistic(x, y) -> tuple[float, None]:
    """scipy's `pearsonr(x, y)` statistic for two 1-D float arrays of the same length (the
    p-value, which LSCP does not read, is None)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("`x` and `y` must be 1-D arrays of the same length.")
    if x.shape[0] < 2:
        raise ValueError("`x` and `y` must have length at least 2.")
    return float(pearson_statistics(x[None, :], y[None, :])[0]), None


def top_n_indices(value_list, n, order="desc"):
    """PyOD's `argmaxn` for a 1-D array (anything else goes to PyOD's own): the indices of
    the values at least the n-th largest (order 'desc'), else below the n-th smallest."""
    values = np.asarray(value_list)
    if values.ndim != 1 or not np.issubdtype(values.dtype, np.number):
        return pyod_argmaxn(value_list, n, order)
    length = len(values)
    if not isinstance(n, (numbers.Integral, np.integer, float)) or not 1 <= n <= length:
        return pyod_argmaxn(value_list, n, order)  # PyOD raises its own error
    if order != "desc":
        n = length - n
    threshold = np.partition(values, length - n)[int(length - n)]
    if order == "desc":
        return np.where(np.greater_equal(values, threshold))[0]
    return np.where(np.less(values, threshold))[0]


def _fast_helpers():
    """PyOD's LSCP module calling `pearson_statistic` and `top_n_indices` for its `pearsonr`
    and `argmaxn` (the names it imported), restored afterwards."""
    return swapped_attributes(pyod_lscp, pearsonr=pearson_statistic, argmaxn=top_n_indices)


def pearson_statistics(x, y) -> np.ndarray:
    """`pearson_statistic(x[i], y[i])` for every row i of two 2-D float arrays of the same
    shape (at least two columns): each row goes through the same numpy operations, its sums
    and norms by the same reductions of a row of that length, its dot product by the same
    `vecdot`; NaN for a row with a constant input."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2 or x.shape[1] < 2:
        raise ValueError("`x` and `y` must be 2-D arrays of the same shape, rows of 2 or more.")
    constant = np.all(x == x[:, :1], axis=1) | np.all(y == y[:, :1], axis=1)
    if constant.any():
        warnings.warn(
            stats.ConstantInputWarning(
                "An input array is constant; the correlation coefficient is not defined."
            ),
            stacklevel=2,
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = x - np.mean(x, axis=1, keepdims=True)
        ym = y - np.mean(y, axis=1, keepdims=True)
        x_max = np.max(np.abs(xm), axis=1, keepdims=True)
        y_max = np.max(np.abs(ym), axis=1, keepdims=True)
        norm_xm = x_max * np.linalg.norm(xm / x_max, axis=-1, keepdims=True)
        norm_ym = y_max * np.linalg.norm(ym / y_max, axis=-1, keepdims=True)
        r = np.vecdot(xm / norm_xm, ym / norm_ym, axis=-1)
    r = np.clip(r, -1.0, 1.0)
    if x.shape[1] == 2:  # scipy returns exactly -1.0 or 1.0 for two points
        r = np.round(r)
    r[constant] = np.nan
    return r


@njit(cache=True)
def frequent_neighbours(neighbours, n_train, threshold):  # pragma: no cover (compiled)
    """PyOD's selection of a local region from the neighbours met over its iterations: for
    each row of `neighbours` (the iterations' neighbour indices side by side, in order), the
    indices met more than `threshold` times, in order of first meeting; with fewer than two,
    the threshold lowered one at a time. Returns the regions back to back and each row's
    start (n_rows + 1 of them), or, as second value, -1 - row for a row whose threshold
    would reach 0 (PyOD's assertion)."""
    n_rows, width = neighbours.shape
    count = np.zeros(n_train, dtype=np.int64)
    distinct = np.empty(width, dtype=np.int64)
    members = np.empty(n_rows * width, dtype=np.int64)
    starts = np.zeros(n_rows + 1, dtype=np.int64)
    filled = 0
    for i in range(n_rows):
        n_distinct = 0
        for c in range(width):
            index = neighbours[i, c]
            if count[index] == 0:
                distinct[n_distinct] = index
                n_distinct += 1
            count[index] += 1
        decrease = 0
        while True:
            kept = 0
            for u in range(n_distinct):
                if count[distinct[u]] > threshold - decrease:
                    kept += 1
            if kept >= 2:
                break
            decrease += 1
            if not decrease < threshold:
                return members[:filled], np.full(1, -1 - i, dtype=np.int64)
        for u in range(n_distinct):
            index = distinct[u]
            if count[index] > threshold - decrease:
                members[filled] = index
                filled += 1
            count[index] = 0
        starts[i + 1] = filled
    return members[:filled], starts


def _trusted_check_array(array, **kwargs):
    """scikit-learn's `check_array` for what the KD-trees of `FastLSCP` get: for a finite,
    non-empty float64 matrix (column slices of arrays PyOD validated), the C-ordered array
    `check_array` returns, without its checks of the input's kind; anything else goes to
    `check_array`."""
    if (
        type(array) is np.ndarray
        and array.dtype == np.float64
        and array.ndim == 2
        and array.size > 0
        and kwargs == {"dtype": np.float64, "order": "C"}
        and np.isfinite(array).all()
    ):
        return np.ascontiguousarray(array)
    return _SKLEARN_CHECK_ARRAY(array, **kwargs)


_SKLEARN_CHECK_ARRAY = sklearn_kd_tree.check_array


def _validated_tree_inputs():
    """scikit-learn's KD-tree module calling `_trusted_check_array` for its `check_array`
    (the name it imported), restored afterwards."""
    return swapped_attributes(sklearn_kd_tree, check_array=_trusted_check_array)


def _uniform_bins(scores, n_bins):
    """`np.histogram(row, bins=n_bins)` for every row of `scores` (finite rows): the counts,
    the edges, and which rows numpy would compute otherwise (edges that do not increase),
    by `_histograms.uniform_bin_counts` on the rows as columns."""
    counts, edges, computed = uniform_bin_counts(np.ascontiguousarray(scores.T), n_bins)
    return counts.T, edges.T, ~computed


def competent_detector_masks(scores, n_bins, n_selected):
    """PyOD's `LSCP._get_competent_detectors` for every row of `scores` (rows: test rows,
    columns: detectors' correlations; NaN taken as 0): `masks[r, b, d]` says detector d is
    a candidate through bin b (PyOD's candidates: the True entries in bin-major order).
    Rows numpy would histogram otherwise are left False and listed in `other`."""
    scores = np.array(scores, dtype=np.float64)
    nan_rows = np.isnan(scores).any(axis=1)
    scores[nan_rows] = np.nan_to_num(scores[nan_rows])
    other = ~np.isfinite(scores).all(axis=1)  # numpy raises on them: PyOD's function does
    masks = np.zeros((len(scores), n_bins, scores.shape[1]), dtype=bool)
    usable = np.flatnonzero(~other)
    if len(usable) == 0:
        return masks, np.flatnonzero(other)
    rows = scores[usable]
    counts, edges, narrow = _uniform_bins(rows, n_bins)
    # PyOD's argmaxn: the bins holding at least the n_selected-th largest count
    threshold = np.sort(counts, axis=1)[:, n_bins - n_selected]
    largest = counts >= threshold[:, None]
    inside = (rows[:, None, :] >= edges[:, :-1, None]) & (rows[:, None, :] <= edges[:, 1:, None])
    found = inside & largest[:, :, None]
    found[narrow] = False
    masks[usable] = found
    other[usable[narrow]] = True
    return masks, np.flatnonzero(other)


def squared_distances(query, data):
    """The KD-tree's reduced Euclidean distance of every query row to every data row: the
    squared differences summed column by column, in the columns' order, as its `rdist`."""
    if query.dtype == data.dtype == np.float64:
        return _compiled_squared_distances(query, data)
    total = np.zeros((len(query), len(data)))
    for column in range(query.shape[1]):
        difference = query[:, column, None] - data[None, :, column]
        total += difference * difference
    return total


@njit(cache=True)
def _compiled_squared_distances(query, data):  # pragma: no cover (compiled)
    """`squared_distances` of float64 rows: per pair, the same subtraction, product and sum
    from 0.0 over the columns in order (no fused multiply-add: numba contracts nothing
    without fastmath)."""
    n_query, n_columns = query.shape
    n_data = data.shape[0]
    total = np.empty((n_query, n_data))
    for i in range(n_query):
        for j in range(n_data):
            sum_ = 0.0
            for column in range(n_columns):
                difference = query[i, column] - data[j, column]
                sum_ += difference * difference
            total[i, j] = sum_
    return total


def _smallest(values, indices, width):
    """Each row's `width` smallest values, increasing, and the indices beside them."""
    if width < values.shape[1]:
        picked = np.argpartition(values, width - 1, axis=1)[:, :width]
        values = np.take_along_axis(values, picked, axis=1)
        indices = np.take_along_axis(indices, picked, axis=1)
    order = np.argsort(values, axis=1, kind="stable")
    return np.take_along_axis(values, order, axis=1), np.take_along_axis(indices, order, axis=1)


@njit(cache=True)
def _distinct_smallest(values, width):  # pragma: no cover (compiled)
    """Each row's `width` smallest values, increasing, and their columns, where the row's
    min(width + 1, columns) smallest values are all different and it has no NaN: then the
    `width` smallest are one set in one order, whatever argpartition's and the stable sort's
    handling of equals, so `_smallest`'s answer. `unsure` marks the other rows, unfilled."""
    n, m = values.shape
    kept = min(width + 1, m)
    distances = np.empty((n, width))
    nearest = np.empty((n, width), dtype=np.intp)
    unsure = np.zeros(n, dtype=np.bool_)
    best = np.empty(kept)
    where = np.empty(kept, dtype=np.intp)
    for i in range(n):
        size = 0
        for j in range(m):
            value = values[i, j]
            if np.isnan(value):
                unsure[i] = True
                break
            if size == kept and value >= best[kept - 1]:
                continue  # not among the smallest (a tie here decides nothing)
            # insert, keeping best increasing; an equal value already kept makes a tie
            position = size if size < kept else kept - 1
            while position > 0 and best[position - 1] > value:
                if position < kept:
                    best[position] = best[position - 1]
                    where[position] = where[position - 1]
                position -= 1
            if position > 0 and best[position - 1] == value:
                unsure[i] = True
            best[position] = value
            where[position] = j
            if size < kept:
                size += 1
        if unsure[i]:
            continue
        for out in range(width):
            distances[i, out] = best[out]
            nearest[i, out] = where[out]
    return distances, nearest, unsure


def smallest_distances(values, width):
    """`_smallest(values, column indices, width)`: rows with distinct smallest values by one
    compiled pass (`_distinct_smallest`), the others by numpy's partition and stable sort."""
    if values.dtype != np.float64 or width < 1 or values.shape[1] == 0:
        return _smallest(values, np.broadcast_to(np.arange(values.shape[1]), values.shape), width)
    distances, nearest, unsure = _distinct_smallest(values, width)
    rows = np.flatnonzero(unsure)
    if len(rows):
        picked = values[rows]
        distances[rows], nearest[rows] = _smallest(
            picked, np.broadcast_to(np.arange(values.shape[1]), picked.shape), width
        )
    return distances, nearest


@njit(cache=True)
def _merged_nearest(old_distances, old_nearest, to_new, new_rows, width):  # pragma: no cover
    """Each row's `width` smallest of its sorted old values (`old_distances`, at the rows
    `old_nearest`) and its values to the new rows (`to_new`, at `new_rows`), increasing; of
    equal values the old come first, then the new in their order (a stable sort of the two
    side by side)."""
    n, n_old = old_distances.shape
    distances = np.empty((n, width))
    nearest = np.empty((n, width), dtype=np.intp)
    for i in range(n):
        order = np.argsort(to_new[i], kind="mergesort")
        a = 0
        b = 0
        for out in range(width):
            if b >= order.shape[0] or (a < n_old and old_distances[i, a] <= to_new[i, order[b]]):
                distances[i, out] = old_distances[i, a]
                nearest[i, out] = old_nearest[i, a]
                a += 1
            else:
                distances[i, out] = to_new[i, order[b]]
                nearest[i, out] = new_rows[order[b]]
                b += 1
    return distances, nearest


def nearest_neighbours(data, query, k, known=None):
    """`KDTree(data).query(query, k)`'s indices (1 <= k <= len(data)), and each query row's
    min(k + 1, len(data)) smallest reduced distances and their data rows.

    The tree returns the k nearest rows by increasing distance: where a row's k + 1 smallest
    distances all differ, that is one answer, read off the distances computed as the tree
    computes them (`squared_distances`); a row with a tie among them (duplicate rows, equal
    distances) is left to the tree, whose order of equals is its own. `known` (query = data):
    the last fit's tables of these rows, `NeighbourTables.known`; a row's nearest are then
    among its last nearest and the new rows, whose distances alone are computed."""
    n = len(data)
    width = min(k + 1, n)
    if known is None:
        distances, nearest = smallest_distances(squared_distances(query, data), width)
    else:
        old_distances, old_nearest, old_to_new = known
        new_rows = np.setdiff1d(np.arange(n), old_to_new)
        distances = np.empty((n, width))
        nearest = np.empty((n, width), dtype=np.intp)
        to_new = squared_distances(data[old_to_new], data[new_rows])
        distances[old_to_new], nearest[old_to_new] = _merged_nearest(
            old_distances, old_to_new[old_nearest], to_new, new_rows.astype(np.intp), width
        )
        if len(new_rows):
            distances[new_rows], nearest[new_rows] = smallest_distances(
                squared_distances(data[new_rows], data), width
            )
    neighbours = nearest[:, :k].copy()
    tied = np.flatnonzero(np.any(distances[:, 1:] == distances[:, :-1], axis=1))
    if len(tied):
        with _validated_tree_inputs():
            neighbours[tied] = KDTree(data).query(query[tied], k=k)[1]
    return neighbours, distances, nearest


def standardized_pair(X, X_t):
    """PyOD's `standardizer(X, X_t)` (both standardised by a StandardScaler fitted on X) for
    two finite float64 matrices of the same columns, by the scaler's own steps on a dense
    array: its incremental mean and variance from zero, the constant-feature mask, the
    zero-safe scale, then `-= mean`, `/= scale` on copies; without the scaler's and
    `check_array`'s validation of each array. Anything else goes to PyOD's own."""
    usable = (
        isinstance(X, np.ndarray)
        and isinstance(X_t, np.ndarray)
        and X.dtype == X_t.dtype == np.float64
        and X.ndim == X_t.ndim == 2
        and X.shape[0] >= 1
        and X_t.shape[0] >= 1
        and X.shape[1] >= 1
        and X.shape[1] == X_t.shape[1]
        and np.isfinite(X).all()
        and np.isfinite(X_t).all()
    )
    if not usable:
        return standardizer(X, X_t)
    mean, variance, seen = _incremental_mean_and_var(
        X, 0.0, 0.0, np.zeros(X.shape[1], dtype=np.int64), sample_weight=None
    )
    if seen.max() == seen.min():
        seen = seen[0]
    scale = _handle_zeros_in_scale(
        np.sqrt(variance), copy=False, constant_mask=_is_constant_feature(variance, mean, seen)
    )
    standardized = []
    for rows in (X, X_t):
        rows = rows.copy(order="K")  # as the scaler's copy: the same memory layout
        rows -= mean
        rows /= scale
        standardized.append(rows)
    return tuple(standardized)


class NeighbourTables:
    """A job's last LSCP fit's training rows and, per local region draw (features, k), each
    row's `nearest_neighbours` tables. The replay refits LSCP whenever a task finished, on
    the same rows plus the new ones, with the same draws (the same random state): a row's
    nearest are then among its last nearest and the new rows. Rows are matched by their bytes;
    a fit with repeated rows neither reuses nor leaves tables."""

    def __init__(self):
        self.rows: list[bytes] | None = None
        self.tables: dict = {}

    def start(self, X):
        """For a fit on X: tables to fill for the next fit, and the last fit's (or None)."""
        rows = [row.tobytes() for row in X]
        if len(set(rows)) < len(rows):
            self.rows, self.tables = None, {}
            return None, None
        previous = None
        if self.rows is not None:
            position = {row: i for i, row in enumerate(rows)}
            old_to_new = np.array([position.get(row, -1) for row in self.rows], dtype=np.intp)
            if len(old_to_new) and (old_to_new >= 0).all():
                previous = _LastFit(old_to_new, self.tables)
        fresh = NeighbourTables()
        fresh.rows = rows
        return fresh, previous

    def remember(self, fit: NeighbourTables) -> None:
        self.rows, self.tables = fit.rows, fit.tables


class _LastFit:
    """The last fit's tables, with the new position of each of its rows."""

    def __init__(self, old_to_new, tables):
        self.old_to_new = old_to_new
        self.tables = tables

    def known(self, key):
        if key not in self.tables:
            return None
        distances, nearest = self.tables[key]
        return distances, nearest, self.old_to_new


class FastLSCP(pyod_lscp.LSCP):
    """PyOD's LSCP with its per-test-row loop over all rows at once (module docstring)."""

    def _get_decision_scores(self, X):
        # PyOD's warning, its local regions, base scores, standardisation and pseudo target
        if (self.local_region_size < self.local_region_min) or (
            self.local_region_size > self.local_region_max
        ):
            warnings.warn(
                f"Local region size of {self.local_region_size} is outside recommended "
                f"range [{self.local_region_min}, {self.local_region_max}]",
                stacklevel=2,
            )
        members, starts = self._local_regions(X)
        test_scores = np.zeros([X.shape[0], self.n_clf])
        for k, detector in enumerate(self.detector_list):
            test_scores[:, k] = detector.decision_function(X)
        train_scores_norm, test_scores_norm = standardized_pair(self.train_scores_, test_scores)
        self.training_pseudo_label_ = np.max(train_scores_norm, axis=1).reshape(-1, 1)
        pseudo_label = self.training_pseudo_label_.ravel()
        correlations = np.zeros([X.shape[0], self.n_clf])
        lengths = np.diff(starts)
        for length in np.unique(lengths).tolist():
            rows = np.flatnonzero(lengths == length)
            region = members[starts[rows][:, None] + np.arange(length)[None, :]]
            for d in range(self.n_clf):
                correlations[rows, d] = pearson_statistics(
                    pseudo_label[region], train_scores_norm[region, d]
                )
        return self._competent_means(correlations, test_scores_norm)

    def _local_regions(self, X_test_norm):
        """PyOD's `_get_local_region`: the regions back to back and each row's start."""
        n_test = X_test_norm.shape[0]
        if self.local_max_features > 1.0:
            warnings.warn("Local max features greater than 1.0, reducing to 1.0", stacklevel=2)
            self.local_max_features = 1.0
        n_features = self.X_train_norm_.shape[1]
        if n_features * self.local_min_features < 1:
            warnings.warn("Local min features smaller than 1, increasing to 1.0", stacklevel=2)
            self.local_min_features = 1.0
        # the training rows' own regions (the fit's) may reuse the last fit's nearest
        # neighbours (`NeighbourTables`): `tables` collects this fit's for the next
        training = X_test_norm is self.X_train_norm_
        memory = getattr(self, "neighbour_tables", None)
        tables = previous = None
        if training and memory is not None:
            tables, previous = memory.start(self.X_train_norm_)
        found = []
        for _ in range(self.local_region_iterations):
            if self.local_max_features == self.local_min_features:
                features = range(0, n_features)
                warnings.warn(
                    "Local min features equals local max features; use all features instead.",
                    stacklevel=2,
                )
            else:
                features = generate_bagging_indices(
                    self.random_state,
                    bootstrap_features=False,
                    n_features=n_features,
                    min_features=int(n_features * self.local_min_features),
                    max_features=int(n_features * self.local_max_features),
                )
            found.append(self._region_neighbours(X_test_norm, features, tables, previous))
        if tables is not None:
            self.neighbour_tables.remember(tables)
        if n_test == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
        side_by_side = np.hstack(found) if found else np.zeros((n_test, 0))
        members, starts = frequent_neighbours(
            np.ascontiguousarray(side_by_side, dtype=np.int64),
            self.X_train_norm_.shape[0],
            self.local_region_threshold,
        )
        if len(starts) == 1 and starts[0] < 0:
            raise AssertionError  # PyOD's assertion on a region of fewer than two neighbours
        return members, starts

    def _region_neighbours(self, X_test_norm, features, tables, previous):
        """One iteration's `KDTree(X_train[:, features]).query(X_test[:, features], k)`
        neighbour indices, by `nearest_neighbours`; `tables` (a fit's training rows only)
        collects each row's nearest for the next fit, `previous` holds the last fit's."""
        k = self.local_region_size
        data = self.X_train_norm_[:, features]
        if not (isinstance(k, numbers.Integral) and 1 <= k <= len(data) and len(X_test_norm) > 0):
            with _validated_tree_inputs():  # the tree's own answer or error
                return KDTree(data).query(X_test_norm[:, features], k=k)[1]
        key = (tuple(np.asarray(features).tolist()), int(k))
        if tables is None:
            return nearest_neighbours(data, X_test_norm[:, features], int(k))[0]
        known = previous.known(key) if previous is not None else None
        neighbours, distances, nearest = nearest_neighbours(data, data, int(k), known)
        tables.tables[key] = (distances, nearest)
        return neighbours

    def _competent_means(self, correlations, test_scores_norm):
        """PyOD's score of each test row: the mean of its competent detectors' scores."""
        n_test = len(correlations)
        scores = np.zeros([n_test])
        if n_test == 0:
            return scores
        if self.n_bins > self.n_clf:
            warnings.warn(
                "The number of histogram bins is greater than the number of "
                "classifiers, reducing n_bins to n_clf.",
                stacklevel=2,
            )
            self.n_bins = self.n_clf
        n_bins, n_selected = self.n_bins, self.n_selected
        other = np.arange(n_test)  # bins PyOD's own function handles (its errors included)
        if (
            isinstance(n_bins, numbers.Integral)
            and isinstance(n_selected, numbers.Integral)
            and 1 <= n_selected <= n_bins
        ):
            masks, other = competent_detector_masks(correlations, int(n_bins), int(n_selected))
            done = np.ones(n_test, dtype=bool)
            done[other] = False
            patterns, groups = np.unique(
                masks[done].reshape(int(done.sum()), -1), axis=0, return_inverse=True
            )
            rows_done = np.flatnonzero(done)
            for g, pattern in enumerate(patterns):
                rows = rows_done[groups.ravel() == g]
                candidates = np.flatnonzero(pattern) % self.n_clf
                scores[rows] = np.mean(test_scores_norm[rows][:, candidates], axis=1)
        with _fast_helpers():
            for i in other.tolist():
                candidates = self._get_competent_detectors(correlations[i])
                scores[i] = np.mean(test_scores_norm[i, candidates])
        return scores
