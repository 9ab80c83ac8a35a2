"""The compiled SOS and SOD loops (stragglers/methods/_pyod_kernels.py) give PyOD's numbers,
bit for bit, on data with and without ties."""

from __future__ import annotations

import numpy as np
import pytest
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
    assert ours.threshold_ == theirs.threshold_


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
