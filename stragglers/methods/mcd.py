"""Minimum covariance determinant (Hardin & Rocke, 2004): robust Mahalanobis distance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.mcd import MCD as PyodMCD


class MCD(OutlierDetectionMethod):
    name: ClassVar[str] = "MCD"
    # PyOD's MCD without scikit-learn's checks per step (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._robust_covariance",)
    defaults: ClassVar[dict[str, Any]] = {
        "refit_growth": 0.25,
    }
    drop_constant_training_columns: ClassVar[bool] = True  # singular covariance otherwise

    def make_detector(self, n_train: int, seed: int) -> PyodMCD:
        """PyOD's MCD, fitted without scikit-learn's checks per concentration step
        (`_robust_covariance.FastMCD`: the same values)."""
        from stragglers.methods._robust_covariance import fast_mcd_class

        return fast_mcd_class()(contamination=self.params["contamination"], random_state=seed)
