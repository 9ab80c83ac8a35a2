"""HBOS (Goldstein & Dengel, 2012): histogram-based outlier score."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.hbos import HBOS as PyodHBOS


class HBOS(OutlierDetectionMethod):
    name: ClassVar[str] = "HBOS"
    # numba's cache of PyOD's code (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._pyod_kernels",)
    defaults: ClassVar[dict[str, Any]] = {
        "n_bins": Param(10, int, ge=2, doc="histogram bins per feature"),  # PyOD default
        "refit_growth": 0.1,
    }
    drop_constant_training_columns: ClassVar[bool] = True  # zero-width histograms

    def make_detector(self, n_train: int, seed: int) -> PyodHBOS:
        from pyod.models.hbos import HBOS as PyodHBOS

        from stragglers.methods._pyod_kernels import cache_pyod_compilation

        cache_pyod_compilation()
        return PyodHBOS(contamination=self.params["contamination"], n_bins=self.params["n_bins"])
