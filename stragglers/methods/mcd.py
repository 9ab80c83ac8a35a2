"""Minimum covariance determinant (Hardin & Rocke, 2004): robust Mahalanobis distance."""

from __future__ import annotations

from typing import Any, ClassVar

from pyod.models.mcd import MCD as PyodMCD

from stragglers.methods._outlier import OutlierDetectionMethod


class MCD(OutlierDetectionMethod):
    name: ClassVar[str] = "MCD"
    defaults: ClassVar[dict[str, Any]] = {"contamination": 0.1, "refit_growth": 0.25}
    drop_constant_training_columns: ClassVar[bool] = True  # singular covariance otherwise

    def make_detector(self, n_train: int, seed: int) -> PyodMCD:
        return PyodMCD(contamination=self.params["contamination"], random_state=seed)
