"""MCD's robust covariance without scikit-learn's validation of every concentration step.

PyOD's MCD fits scikit-learn's MinCovDet, whose FastMCD search (Rousseeuw & Van Driessen,
1999) computes the covariance of a candidate support thousands of times per fit through
`empirical_covariance`, which validates its parameters and its array at every call; profiles
found that validation to be about half of an MCD job. `support_covariance` is the same
computation (numpy's biased covariance of the rows) for the arrays the search hands it, and
`FastMCD` is PyOD's MCD with MinCovDet using it: the same steps, draws and values. Pinned by
tests/test_robust_covariance.py against PyOD and scikit-learn (requirements.lock).
"""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np


def support_covariance(X: np.ndarray, *, assume_centered: bool = False) -> np.ndarray:
    """`sklearn.covariance.empirical_covariance(X, assume_centered=...)` for a numeric array,
    without its checks."""
    X = np.asarray(X)
    if X.ndim == 1:
        X = np.reshape(X, (1, -1))
    if X.shape[0] == 1:
        warnings.warn(
            "Only one sample available. You may want to reshape your data array", stacklevel=2
        )
    if assume_centered:
        covariance = np.dot(X.T, X) / X.shape[0]
    else:
        covariance = np.cov(X.T, bias=1)
    if covariance.ndim == 0:
        covariance = np.array([[covariance]])
    return covariance


@cache
def fast_mcd_class() -> type:
    """FastMCD, defined on first use so that importing the methods imports no PyOD."""
    from pyod.models.mcd import MCD as PyodMCD
    from sklearn.covariance import MinCovDet
    from sklearn.utils.validation import check_array

    class SupportCovarianceMinCovDet(MinCovDet):
        """MinCovDet with `support_covariance` as its non-robust covariance."""

        _nonrobust_covariance = staticmethod(support_covariance)

    class FastMCD(PyodMCD):
        """PyOD's MCD fitting `SupportCovarianceMinCovDet` (PyOD's `fit`, otherwise as is)."""

        def fit(self, X, y=None):
            X = check_array(X)
            self._set_n_classes(y)
            self.detector_ = SupportCovarianceMinCovDet(
                store_precision=self.store_precision,
                assume_centered=self.assume_centered,
                support_fraction=self.support_fraction,
                random_state=self.random_state,
            )
            self.detector_.fit(X=X, y=y)
            self.decision_scores_ = self.detector_.dist_
            self._process_decision_scores()
            return self

    return FastMCD
