"""Isolation forest (Liu et al., 2008)."""

from __future__ import annotations

from typing import Any, ClassVar

from pyod.models.iforest import IForest as PyodIForest

from stragglers.methods._outlier import OutlierDetectionMethod


class IForest(OutlierDetectionMethod):
    name: ClassVar[str] = "IFOREST"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": 0.1,
        "n_estimators": 100,  # PyOD default
        "refit_growth": 0.5,
    }

    def make_detector(self, n_train: int, seed: int) -> PyodIForest:
        return PyodIForest(
            contamination=self.params["contamination"],
            n_estimators=self.params["n_estimators"],
            random_state=seed,
            n_jobs=1,
        )
