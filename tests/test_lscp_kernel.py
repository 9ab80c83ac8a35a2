"""LSCP's local correlations (stragglers/methods/_lscp_kernel.py) give scipy's `pearsonr`
statistic bit for bit, and FastLSCP PyOD's LSCP scores."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import pearsonr

from stragglers.methods._lscp_kernel import FastLSCP, pearson_statistic


def _pairs():
    """Pairs as LSCP's local regions give them, and the edge cases of scipy's code: two
    points (rounded to +-1), constant inputs (NaN), nearly collinear, wide scales, ties."""
    rng = np.random.default_rng(11)
    for trial in range(3000):
        n = int(rng.integers(2, 70))
        x = rng.normal(size=n) * 10 ** rng.uniform(-6, 6)
        y = rng.normal(size=n) + rng.uniform(-1e3, 1e3)
        shape = trial % 6
        if shape == 1:
            x, y = np.round(x), np.round(y, 1)
        elif shape == 2:
            y = 3 * x + 1
        elif shape == 3:
            x = np.full(n, 2.5)
        elif shape == 4:
            y = -x + 1e-9 * rng.normal(size=n)
        elif shape == 5:
            x = np.r_[np.zeros(n - 1), 1.0]
        yield x, y
    # what standardised scores of a constant detector hold: NaN and infinities
    yield np.array([np.nan, 1.0, 2.0]), np.array([1.0, 2.0, 4.0])
    yield np.array([np.inf, 1.0, 2.0]), np.array([1.0, 2.0, 4.0])
    yield np.array([np.nan, np.nan]), np.array([1.0, 2.0])


def test_pearson_statistic_equals_scipys():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x, y in _pairs():
            expected = np.float64(pearsonr(x, y)[0])
            ours = np.float64(pearson_statistic(x, y)[0])
            assert ours.tobytes() == expected.tobytes() or (
                np.isnan(ours) and np.isnan(expected)
            ), (x, y)


def test_pearson_statistic_rejects_what_scipy_rejects():
    with pytest.raises(ValueError):
        pearson_statistic(np.array([1.0]), np.array([2.0]))
    with pytest.raises(ValueError):
        pearson_statistic(np.arange(3.0), np.arange(4.0))


@pytest.mark.parametrize("rows", [12, 40, 150])
def test_fast_lscp_scores_equal_pyods(rows):
    """Same training scores, test scores and labels as PyOD's LSCP (LOF base detectors, as
    the method builds them), with PyOD's `pearsonr` restored afterwards."""
    import pyod.models.lscp as pyod_lscp
    from pyod.models.lof import LOF

    rng = np.random.default_rng(rows)
    train = np.round(rng.normal(size=(rows, 5)), 1)
    test = rng.normal(size=(rows // 2 + 3, 5))

    def make(cls):
        base = [LOF(n_neighbors=min(k, rows - 1)) for k in (5, 10)]
        return cls(base, local_region_size=min(30, rows), contamination=0.1, random_state=3)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, ours = make(pyod_lscp.LSCP).fit(train), make(FastLSCP).fit(train)
        assert ours.decision_scores_.tobytes() == theirs.decision_scores_.tobytes()
        assert ours.threshold_ == theirs.threshold_
        assert ours.decision_function(test).tobytes() == theirs.decision_function(test).tobytes()
        assert (ours.predict(test) == theirs.predict(test)).all()
    assert pyod_lscp.pearsonr is pearsonr
    assert pyod_lscp.argmaxn.__module__ == "pyod.utils.utility"


def test_top_n_indices_equals_argmaxn():
    """The largest bins of histograms (ties among them) and other 1-D arrays, both orders."""
    from pyod.utils.utility import argmaxn

    from stragglers.methods._lscp_kernel import top_n_indices

    rng = np.random.default_rng(5)
    for trial in range(2000):
        length = int(rng.integers(1, 12))
        values = rng.integers(0, 4, size=length) if trial % 2 else rng.normal(size=length)
        for n in range(1, length + 1):
            for order in ("desc", "asc"):
                try:
                    expected = argmaxn(values, n, order=order)
                except ValueError:  # 'asc' with n = length: both partition out of bounds
                    with pytest.raises(ValueError):
                        top_n_indices(values, n, order=order)
                    continue
                ours = top_n_indices(values, n, order=order)
                assert ours.dtype == expected.dtype
                assert (ours == expected).all(), (values, n, order)
    with pytest.raises(ValueError):
        top_n_indices(np.arange(3), 4)
