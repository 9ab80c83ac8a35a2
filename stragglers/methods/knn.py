"""kNN outlier detection (Ramaswamy et al., 2000): distance to the k-th nearest neighbour."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.knn import KNN as PyodKNN


class KNN(OutlierDetectionMethod):
    name: ClassVar[str] = "KNN"
    defaults: ClassVar[dict[str, Any]] = {
        "n_neighbors": Param(
            5, int, ge=1, doc="neighbours whose distance scores a task"
        ),  # PyOD default
        "refit_growth": 0.1,
    }

    def make_detector(self, n_train: int, seed: int) -> PyodKNN:
        from pyod.models.knn import KNN as PyodKNN

        return PyodKNN(
            contamination=self.params["contamination"],
            n_neighbors=self.neighbours(self.params["n_neighbors"], n_train),
            method="largest",
        )
