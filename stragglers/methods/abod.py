"""ABOD (Kriegel et al., 2008): angle-based outlier detection, PyOD's fast (kNN) variant."""

from __future__ import annotations

from typing import Any, ClassVar

from pyod.models.abod import ABOD as PyodABOD

from stragglers.methods._outlier import OutlierDetectionMethod, shrink_neighbours
from stragglers.methods.base import Param


class ABOD(OutlierDetectionMethod):
    name: ClassVar[str] = "ABOD"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": Param(0.1, float, gt=0, le=0.5),
        "n_neighbors": Param(5, int, ge=1),  # PyOD default (the paper's code uses PyOD defaults)
        "refit_growth": Param(0.1, float, ge=0),
    }
    min_train: ClassVar[int] = 3  # angles need two other points

    def make_detector(self, n_train: int, seed: int) -> PyodABOD:
        return PyodABOD(
            contamination=self.params["contamination"],
            n_neighbors=shrink_neighbours(self.params["n_neighbors"], n_train),
            method="fast",
        )
