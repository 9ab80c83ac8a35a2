"""Subspace outlier detection (Kriegel et al., 2009)."""

from __future__ import annotations

from typing import Any, ClassVar

from pyod.models.sod import SOD as PyodSOD

from stragglers.methods._outlier import OutlierDetectionMethod, shrink_neighbours


class SOD(OutlierDetectionMethod):
    name: ClassVar[str] = "SOD"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": 0.1,
        "n_neighbors": 20,  # PyOD defaults
        "ref_set": 10,
        "alpha": 0.8,
        "refit_growth": 0.5,
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
