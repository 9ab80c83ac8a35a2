"""`density_histograms` (stragglers/methods/_histograms.py) gives `np.histogram(column,
bins=n, density=True)` of every column, value for value, and reports the columns numpy
refuses."""

from __future__ import annotations

import numpy as np
import pytest
from neighbour_samples import varied_rows

from stragglers.methods._histograms import density_histograms


def _columns(rng: np.random.Generator, trial: int) -> np.ndarray:
    """Rows as HBOS gets them: normal at many scales, rounded (ties, values on the edges of
    quarter bins), a constant column, repeated rows, one row; signed zeros, ranges of a few
    ulps, near overflow and subnormal, rows on the edges."""
    n = 1 + trial % 3 if trial % 7 == 0 else int(rng.integers(2, 400))
    d = int(rng.integers(1, 6))
    special = {
        1: lambda: np.where(rng.random((n, d)) < 0.5, 0.0, -0.0),
        2: lambda: 1.0 + rng.integers(0, 3, size=(n, d)) * np.finfo(float).eps,
        3: lambda: rng.uniform(-1, 1, size=(n, d)) * 1e307,
        4: lambda: rng.uniform(0, 1, size=(n, d)) * 1e-310,
        5: lambda: np.linspace(-3.0, 5.0, n)[:, None] * np.ones(d),
    }.get(trial % 6)
    if special is not None:
        return special()
    X = varied_rows(rng, trial, n, d) * 10.0 ** rng.uniform(-12, 12, size=d)
    return np.round(X * 4) / 4 if trial % 4 == 1 else X


@pytest.mark.parametrize("n_bins", [3, 5, 10, 15, 20, 25, 30, 50, 257])
def test_density_histograms_equal_numpys(n_bins):
    rng = np.random.default_rng(n_bins)
    computed_any = refused_any = False
    for trial in range(300):
        X = _columns(rng, trial)
        densities, edges, computed = density_histograms(X, n_bins)
        expected = []
        for i in range(X.shape[1]):
            try:
                expected.append(np.histogram(X[:, i], bins=n_bins, density=True))
            except ValueError:
                expected.append(None)
        if not computed:
            refused_any = True
            assert any(column is None for column in expected), trial
            continue
        computed_any = True
        for i, (hist, bin_edges) in enumerate(expected):
            assert densities[:, i].tobytes() == hist.tobytes(), (trial, i)
            assert edges[:, i].tobytes() == bin_edges.tobytes(), (trial, i)
    assert computed_any
    assert refused_any or n_bins < 50
