"""One-class SVM (Schoelkopf et al., 2001), RBF kernel."""

from __future__ import annotations

from typing import Any, ClassVar

from pyod.models.ocsvm import OCSVM as PyodOCSVM

from stragglers.methods._outlier import OutlierDetectionMethod


class OCSVM(OutlierDetectionMethod):
    name: ClassVar[str] = "OCSVM"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": 0.1,
        "nu": 0.5,  # PyOD default
        "refit_growth": 0.1,
    }

    def make_detector(self, n_train: int, seed: int) -> PyodOCSVM:
        return PyodOCSVM(contamination=self.params["contamination"], nu=self.params["nu"])
