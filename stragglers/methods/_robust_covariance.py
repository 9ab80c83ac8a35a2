"""MCD's robust covariance without scikit-learn's validation of every concentration step.

PyOD's MCD fits scikit-learn's MinCovDet, whose FastMCD search (Rousseeuw & Van Driessen,
1999) computes the covariance of a candidate support thousands of times per fit through
`empirical_covariance`, which validates its parameters and its array at every call; profiles
found that validation to be about half of an MCD job. `support_covariance` is the same
computation (numpy's biased covariance of the rows) for the arrays the search hands it, and
`FastMCD` is PyOD's MCD with MinCovDet using it: the same steps, draws and values. Each
concentration step also inverts its covariance with scipy's `pinvh`, whose batch and array
wrappers, validation and LAPACK look-ups cost several times its small eigendecomposition;
`symmetric_pseudo_inverse` is `pinvh` for a finite float64 matrix by the same LAPACK call
(`syev` with the same work size) and the same cut-off and product. Pinned by
tests/test_robust_covariance.py against PyOD, scikit-learn and scipy (requirements.lock).
"""

from __future__ import annotations

import types
import warnings
from functools import cache

import numpy as np
from scipy import linalg


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
def _symmetric_eigen_solver(n: int):
    """scipy `eigh(driver="ev", lower=True)`'s LAPACK routine for an n x n float64 matrix and
    the work size it asks it for."""
    from scipy.linalg.lapack import _compute_lwork

    sample = np.zeros((1, 1))
    solver, work_size_query = linalg.get_lapack_funcs(("syev", "syev_lwork"), [sample])
    return solver, _compute_lwork(work_size_query, n=n, lower=True)


def symmetric_pseudo_inverse(a, atol=None, rtol=None, lower=True, check_finite=True, **rest):
    """scipy's `linalg.pinvh(a, ...)`: for a finite, non-empty, square float64 matrix with the
    default tolerances, its steps (eigh's `syev` on the lower triangle, eigenvalues above
    max |eigenvalue| * n * eps inverted, (u * 1 / s) @ u.T) without its wrappers; anything
    else is scipy's own call."""
    if (
        atol is not None
        or rtol is not None
        or not lower
        or rest
        or not isinstance(a, np.ndarray)
        or a.dtype != np.float64
        or a.ndim != 2
        or a.shape[0] != a.shape[1]
        or a.shape[0] == 0
        or not np.isfinite(a).all()
    ):
        return linalg.pinvh(a, atol=atol, rtol=rtol, lower=lower, check_finite=check_finite, **rest)
    solver, work_size = _symmetric_eigen_solver(a.shape[0])
    values, vectors, info = solver(a=a, overwrite_a=False, lower=True, compute_v=1, lwork=work_size)
    if info != 0:  # scipy's error
        return linalg.pinvh(a, check_finite=check_finite)
    largest = np.max(np.abs(values), initial=0.0)
    cutoff = 0.0 + largest * (max(a.shape) * np.finfo("d").eps)
    kept = abs(values) > cutoff
    inverted = 1.0 / values[kept]
    vectors = vectors[:, kept]
    return (vectors * inverted) @ vectors.conj().T


# scipy.linalg as scikit-learn's robust covariance module reads it, with the cheaper pinvh
_LINALG_WITH_CHEAP_PINVH = types.SimpleNamespace(
    **{name: getattr(linalg, name) for name in ("svdvals",)}, pinvh=symmetric_pseudo_inverse
)


@cache
def fast_mcd_class() -> type:
    """FastMCD, defined on first use so that importing the methods imports no PyOD."""
    import sklearn.covariance._robust_covariance as sklearn_robust_covariance
    from pyod.models.mcd import MCD as PyodMCD
    from sklearn.covariance import MinCovDet
    from sklearn.utils.validation import check_array

    from stragglers.methods._library_swap import swapped_attributes

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
            # the module's scipy.linalg (pinvh, svdvals) swapped for the fit alone
            with swapped_attributes(sklearn_robust_covariance, linalg=_LINALG_WITH_CHEAP_PINVH):
                self.detector_.fit(X=X, y=y)
            self.decision_scores_ = self.detector_.dist_
            self._process_decision_scores()
            return self

    return FastMCD
