"""Isolation forest (Liu et al., 2008); its trees are scored in a plain loop instead of
through joblib (stragglers/methods/_isolation_scores.py, same numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.iforest import IForest as PyodIForest


class IForest(OutlierDetectionMethod):
    name: ClassVar[str] = "IFOREST"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": Param(
            0.1,
            float,
            gt=0,
            le=0.5,
            doc="share of the training rows the detector takes as outliers (its score threshold)",
        ),
        "n_estimators": Param(100, int, ge=1, doc="isolation trees"),  # PyOD default
        "refit_growth": Param(
            0.5,
            float,
            ge=0,
            doc="refit once the finished tasks grew by this share since the last fit (0: whenever one more finished)",
        ),
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
