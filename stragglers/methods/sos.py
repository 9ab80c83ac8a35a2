"""Stochastic outlier selection (Janssens et al., 2012): PyOD's SOS, its affinity search
compiled (stragglers/methods/_pyod_kernels.py, same numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.sos import SOS as PyodSOS


class SOS(OutlierDetectionMethod):
    name: ClassVar[str] = "SOS"
    defaults: ClassVar[dict[str, Any]] = {
        "perplexity": Param(
            4.5, float, gt=0, doc="effective number of neighbours of the affinity distribution"
        ),  # PyOD default
        "refit_growth": 0.5,
    }
    score_with_training: ClassVar[bool] = True  # PyOD's SOS scores a batch against itself
    # the compiled loops (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._pyod_kernels",)

    def make_detector(self, n_train: int, seed: int) -> PyodSOS:
        from stragglers.methods._pyod_kernels import FastSOS

        return FastSOS(
            contamination=self.params["contamination"], perplexity=self.params["perplexity"]
        )
