"""Minimum covariance determinant (Hardin & Rocke, 2004): robust Mahalanobis distance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.mcd import MCD as PyodMCD


class MCD(OutlierDetectionMethod):
    name: ClassVar[str] = "MCD"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": Param(
            0.1,
            float,
            gt=0,
            le=0.5,
            doc="share of the training rows the detector takes as outliers (its score threshold)",
        ),
        "refit_growth": Param(
            0.25,
            float,
            ge=0,
            doc="refit once the finished tasks grew by this share since the last fit (0: whenever one more finished)",
        ),
    }
    drop_constant_training_columns: ClassVar[bool] = True  # singular covariance otherwise

    def make_detector(self, n_train: int, seed: int) -> PyodMCD:
        from pyod.models.mcd import MCD as PyodMCD

        return PyodMCD(contamination=self.params["contamination"], random_state=seed)
