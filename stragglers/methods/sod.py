"""Subspace outlier detection (Kriegel et al., 2009): PyOD's SOD, its shared-neighbour count
compiled once and cached and its scores computed for all rows at once
(stragglers/methods/_pyod_kernels.py, same numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.sod import SOD as PyodSOD


class SOD(OutlierDetectionMethod):
    name: ClassVar[str] = "SOD"
    defaults: ClassVar[dict[str, Any]] = {
        # PyOD defaults; PyOD needs 1 < ref_set < n_neighbors < the training rows
        "n_neighbors": Param(
            20, int, ge=3, doc="neighbours considered for each task's reference set"
        ),
        "ref_set": Param(
            10, int, ge=2, doc="shared nearest neighbours that make the reference set"
        ),
        "alpha": Param(
            0.8,
            float,
            gt=0,
            le=1,
            doc="share of the reference set's variance that selects the relevant subspace",
        ),
        "refit_growth": 0.5,
    }
    min_train: ClassVar[int] = 4  # needs ref_set (>= 2) < n_neighbors (>= 3) < n_train
    score_with_training: ClassVar[bool] = True  # PyOD's SOD scores a batch against itself
    # the compiled loops (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._pyod_kernels",)

    def make_detector(self, n_train: int, seed: int) -> PyodSOD:
        from stragglers.methods._pyod_kernels import FastSOD

        n_neighbors = self.neighbours(self.params["n_neighbors"], n_train)
        ref_set = int(self.params["ref_set"])
        if not self.abstains:
            ref_set = max(2, min(ref_set, n_neighbors - 1))
        return FastSOD(
            contamination=self.params["contamination"],
            n_neighbors=n_neighbors,
            ref_set=ref_set,
            alpha=self.params["alpha"],
        )
