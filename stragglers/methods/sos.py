"""Stochastic outlier selection (Janssens et al., 2012)."""

from __future__ import annotations

from typing import Any, ClassVar

from pyod.models.sos import SOS as PyodSOS

from stragglers.methods._outlier import OutlierDetectionMethod


class SOS(OutlierDetectionMethod):
    name: ClassVar[str] = "SOS"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": 0.1,
        "perplexity": 4.5,  # PyOD default
        "refit_growth": 0.5,
    }
    score_with_training: ClassVar[bool] = True  # PyOD's SOS scores a batch against itself

    def make_detector(self, n_train: int, seed: int) -> PyodSOS:
        return PyodSOS(
            contamination=self.params["contamination"], perplexity=self.params["perplexity"]
        )
