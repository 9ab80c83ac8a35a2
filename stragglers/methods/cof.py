"""Connectivity-based outlier factor (Tang et al., 2002): PyOD's COF, its chaining distances
without the per-neighbour Python loop (stragglers/methods/_cof_kernel.py, same numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.cof import COF as PyodCOF


class COF(OutlierDetectionMethod):
    name: ClassVar[str] = "COF"
    defaults: ClassVar[dict[str, Any]] = {
        "n_neighbors": Param(
            15, int, ge=1, doc="neighbours of the connectivity-based outlier factor"
        ),  # the paper's code
        "refit_growth": 0.25,
    }
    min_train: ClassVar[int] = 3
    score_with_training: ClassVar[bool] = True  # PyOD's COF scores a batch against itself
    # the chaining distances (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._cof_kernel",)

    def make_detector(self, n_train: int, seed: int) -> PyodCOF:
        from stragglers.methods._cof_kernel import FastCOF

        return FastCOF(
            contamination=self.params["contamination"],
            n_neighbors=self.neighbours(self.params["n_neighbors"], n_train),
        )
