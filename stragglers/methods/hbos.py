"""HBOS (Goldstein & Dengel, 2012): histogram-based outlier score."""

from __future__ import annotations

from typing import Any, ClassVar

from pyod.models.hbos import HBOS as PyodHBOS

from stragglers.methods._outlier import OutlierDetectionMethod


class HBOS(OutlierDetectionMethod):
    name: ClassVar[str] = "HBOS"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": 0.1,
        "n_bins": 10,  # PyOD default
        "refit_growth": 0.1,
    }
    drop_constant_training_columns: ClassVar[bool] = True  # zero-width histograms

    def make_detector(self, n_train: int, seed: int) -> PyodHBOS:
        return PyodHBOS(contamination=self.params["contamination"], n_bins=self.params["n_bins"])
