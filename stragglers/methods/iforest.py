"""Isolation forest (Liu et al., 2008); its trees are built and scored in a plain loop
instead of through scikit-learn's bagging and joblib (stragglers/methods/_isolation_scores.py,
the same trees and numbers)."""

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

    # the sequential scoring (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._isolation_scores",)

    def make_detector(self, n_train: int, seed: int) -> PyodIForest:
        from stragglers.methods._isolation_scores import FastIForest

        return FastIForest(
            contamination=self.params["contamination"],
            n_estimators=self.params["n_estimators"],
            random_state=seed,
            n_jobs=1,
        )
