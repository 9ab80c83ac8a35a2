"""One-class SVM (Schoelkopf et al., 2001), RBF kernel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.ocsvm import OCSVM as PyodOCSVM


class OCSVM(OutlierDetectionMethod):
    name: ClassVar[str] = "OCSVM"
    defaults: ClassVar[dict[str, Any]] = {
        "nu": Param(
            0.5, float, gt=0, le=1, doc="bound on the share of training errors and support vectors"
        ),  # PyOD default
        "refit_growth": 0.1,
    }

    def make_detector(self, n_train: int, seed: int) -> PyodOCSVM:
        from pyod.models.ocsvm import OCSVM as PyodOCSVM

        return PyodOCSVM(contamination=self.params["contamination"], nu=self.params["nu"])
