"""Isolation forest (Liu et al., 2008)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.iforest import IForest as PyodIForest


class IForest(OutlierDetectionMethod):
    name: ClassVar[str] = "IFOREST"
    defaults: ClassVar[dict[str, Any]] = {
        "n_estimators": Param(100, int, ge=1, doc="isolation trees"),  # PyOD default
        "refit_growth": 0.5,
    }

    def make_detector(self, n_train: int, seed: int) -> PyodIForest:
        from pyod.models.iforest import IForest as PyodIForest

        return PyodIForest(
            contamination=self.params["contamination"],
            n_estimators=self.params["n_estimators"],
            random_state=seed,
            n_jobs=1,
        )
