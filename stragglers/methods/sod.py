"""Subspace outlier detection (Kriegel et al., 2009)."""

from __future__ import annotations

from typing import Any, ClassVar

from pyod.models.sod import SOD as PyodSOD

from stragglers.methods._outlier import OutlierDetectionMethod, shrink_neighbours
from stragglers.methods.base import Param


class SOD(OutlierDetectionMethod):
    name: ClassVar[str] = "SOD"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": Param(0.1, float, gt=0, le=0.5),
        "n_neighbors": Param(20, int, ge=1),  # PyOD defaults
        "ref_set": Param(10, int, ge=1),
        "alpha": Param(0.8, float, gt=0, le=1),
        "refit_growth": Param(0.5, float, ge=0),
    }
    min_train: ClassVar[int] = 3  # needs ref_set (>= 1) < n_neighbors (>= 2) < n_train
    score_with_training: ClassVar[bool] = True  # PyOD's SOD scores a batch against itself

    def make_detector(self, n_train: int, seed: int) -> PyodSOD:
        n_neighbors = shrink_neighbours(self.params["n_neighbors"], n_train)
        return PyodSOD(
            contamination=self.params["contamination"],
            n_neighbors=n_neighbors,
            ref_set=max(1, min(int(self.params["ref_set"]), n_neighbors - 1)),
            alpha=self.params["alpha"],
        )
