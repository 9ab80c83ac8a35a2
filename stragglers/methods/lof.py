"""Local outlier factor (Breunig et al., 2000)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.lof import LOF as PyodLOF


class LOF(OutlierDetectionMethod):
    name: ClassVar[str] = "LOF"
    defaults: ClassVar[dict[str, Any]] = {
        "n_neighbors": Param(
            15, int, ge=1, doc="neighbours of the local outlier factor"
        ),  # the paper's code (PyOD's default is 20)
        "refit_growth": 0.1,
    }

    def make_detector(self, n_train: int, seed: int) -> PyodLOF:
        from pyod.models.lof import LOF as PyodLOF

        return PyodLOF(
            contamination=self.params["contamination"],
            n_neighbors=self.neighbours(self.params["n_neighbors"], n_train),
        )
