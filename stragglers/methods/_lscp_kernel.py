"""LSCP's local correlations without scipy's per-call overhead, same numbers as PyOD's.

PyOD's LSCP scores each test row by correlating, over the row's local region, the training
rows' pseudo ground truth with each base detector's scores: one `scipy.stats.pearsonr` call
per row and detector. scipy's call validates its arguments, picks an array namespace and
computes a p-value (a beta distribution) that LSCP throws away: most of LSCP's time at the
replay's batch sizes. `pearson_statistic` computes only the coefficient, with the same numpy
operations in the same order as scipy's `pearsonr` on 1-D arrays (mean, centring, the
max-scaled norm, `vecdot`, clip, rounding for two points; NaN for a constant input), so the values are the same bits.
`top_n_indices` is PyOD's `argmaxn` (the largest histogram bins) without scikit-learn's
input validation of a 1-D array at each call, the other large share. `FastLSCP` is PyOD's
detector calling these two in place of `pearsonr` and `argmaxn`; everything else is PyOD's.
tests/test_lscp_kernel.py checks them against scipy's and PyOD's, value for value.
"""

from __future__ import annotations

import contextlib
import numbers
import warnings

import numpy as np
import pyod.models.lscp as pyod_lscp
from pyod.utils.utility import argmaxn as pyod_argmaxn
from scipy import stats


def pearson_statistic(x, y) -> tuple[float, None]:
    """scipy's `pearsonr(x, y)` statistic for two 1-D float arrays of the same length (the
    p-value, which LSCP does not read, is None)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("`x` and `y` must be 1-D arrays of the same length.")
    if x.shape[0] < 2:
        raise ValueError("`x` and `y` must have length at least 2.")
    const_x = bool(np.all(x == x[0]))
    const_y = bool(np.all(y == y[0]))
    if const_x or const_y:
        warnings.warn(
            stats.ConstantInputWarning(
                "An input array is constant; the correlation coefficient is not defined."
            ),
            stacklevel=2,
        )
        return float("nan"), None
    x_mean = np.mean(x, keepdims=True)
    y_mean = np.mean(y, keepdims=True)
    xm = x - x_mean
    ym = y - y_mean
    x_max = np.max(np.abs(xm), keepdims=True)
    y_max = np.max(np.abs(ym), keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        norm_xm = x_max * np.linalg.norm(xm / x_max, axis=-1, keepdims=True)
        norm_ym = y_max * np.linalg.norm(ym / y_max, axis=-1, keepdims=True)
        r = np.vecdot(xm / norm_xm, ym / norm_ym, axis=-1)
    r = np.clip(r, -1.0, 1.0)
    if x.shape[0] == 2:  # scipy returns exactly -1.0 or 1.0 for two points
        r = np.round(r)
    return float(r), None


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


@contextlib.contextmanager
def _fast_helpers():
    """PyOD's LSCP module calling `pearson_statistic` and `top_n_indices` for its `pearsonr`
    and `argmaxn` (the names it imported), restored afterwards."""
    originals = pyod_lscp.pearsonr, pyod_lscp.argmaxn
    pyod_lscp.pearsonr, pyod_lscp.argmaxn = pearson_statistic, top_n_indices
    try:
        yield
    finally:
        pyod_lscp.pearsonr, pyod_lscp.argmaxn = originals


class FastLSCP(pyod_lscp.LSCP):
    """PyOD's LSCP with `pearson_statistic` and `top_n_indices` for its helpers."""

    def _get_decision_scores(self, X):
        with _fast_helpers():
            return super()._get_decision_scores(X)
