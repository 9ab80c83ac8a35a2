"""ABOD (Kriegel et al., 2008): angle-based outlier detection, PyOD's fast (kNN) variant, its
angle variances computed in one compiled loop per point (stragglers/methods/_pyod_kernels.py,
same numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import JobInfo, Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.abod import ABOD as PyodABOD


class ABOD(OutlierDetectionMethod):
    name: ClassVar[str] = "ABOD"
    # numba's cache of PyOD's code and the angle variances (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._pyod_kernels",)
    defaults: ClassVar[dict[str, Any]] = {
        "n_neighbors": Param(
            5, int, ge=1, doc="neighbours of the fast (kNN) angle variant"
        ),  # PyOD default (the paper's code uses PyOD defaults)
        "refit_growth": 0.1,
    }
    protocol_rules: ClassVar[tuple[str, ...]] = ("abod_object",)
    min_train: ClassVar[int] = 3  # angles need two other points

    def start_job(self, job: JobInfo) -> None:
        super().start_job(job)
        self._reused: PyodABOD | None = None

    def make_detector(self, n_train: int, seed: int) -> PyodABOD:
        if self.rules.abod_object == "reused":
            # rule `abod_object: reused`: the script's one object per job; PyOD lowers its
            # n_neighbors to n_train - 1 in a fit on too few rows, and it stays lowered
            if self._reused is None:
                self._reused = self._new_detector(n_train)
            return self._reused
        return self._new_detector(n_train)

    def _new_detector(self, n_train: int) -> PyodABOD:
        from stragglers.methods._pyod_kernels import FastABOD, cache_pyod_compilation

        cache_pyod_compilation()
        return FastABOD(
            contamination=self.params["contamination"],
            n_neighbors=self.neighbours(self.params["n_neighbors"], n_train),
            method="fast",
        )
