"""CBLOF (He et al., 2003): cluster-based local outlier factor on k-means clusters."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from stragglers.methods._features import distinct_row_count
from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Checkpoint, Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.cblof import CBLOF as PyodCBLOF

# Looser (alpha, beta) pairs tried when PyOD cannot split clusters into large and small ones.
# With alpha = 0.5 alone a split always exists once there are two clusters (all clusters but
# the smallest hold at least half the rows); PyOD needs beta > 1.
FALLBACK_ALPHA_BETA = ((0.8, 3.0), (0.7, 2.0), (0.5, 1.5))


def cblof_attempts(n_clusters: int, alpha: float, beta: float, n_distinct: int):
    """(n_clusters, alpha, beta) settings to try, in order, for a sample with `n_distinct` rows."""
    k = min(int(n_clusters), n_distinct)
    if k < 2:
        return []
    ks = [k] + [kk for kk in sorted({max(2, k // 2), 2}, reverse=True) if kk < k]
    pairs = [(alpha, beta)] + [p for p in FALLBACK_ALPHA_BETA if p != (alpha, beta)]
    return [(kk, a, b) for kk in ks for a, b in pairs]


class CBLOF(OutlierDetectionMethod):
    name: ClassVar[str] = "CBLOF"
    # numba's cache of PyOD's code (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._pyod_kernels",)
    defaults: ClassVar[dict[str, Any]] = {
        "n_clusters": Param(
            8, int, ge=1, doc="k-means clusters (at most the distinct finished rows)"
        ),  # PyOD defaults
        "alpha": Param(
            0.9, float, gt=0, lt=1, doc="share of the rows the large clusters must hold"
        ),
        "beta": Param(
            5.0,
            float,
            gt=1,
            doc="smallest size ratio between the last large and the first small cluster",
        ),  # PyOD needs beta > 1
        "refit_growth": 0.1,
    }

    def make_detector(
        self,
        n_train: int,
        seed: int,
        n_clusters: int | None = None,
        alpha: float | None = None,
        beta: float | None = None,
    ) -> PyodCBLOF:
        from pyod.models.cblof import CBLOF as PyodCBLOF

        from stragglers.methods._pyod_kernels import cache_pyod_compilation

        cache_pyod_compilation()
        return PyodCBLOF(
            contamination=self.params["contamination"],
            n_clusters=self.params["n_clusters"] if n_clusters is None else n_clusters,
            alpha=self.params["alpha"] if alpha is None else alpha,
            beta=self.params["beta"] if beta is None else beta,
            check_estimator=False,
            random_state=seed,
        )

    def fit_detector(self, train: np.ndarray, checkpoint: Checkpoint, seed: int):
        if self.abstains:  # the configured clustering only; an error flags nothing
            return super().fit_detector(train, checkpoint, seed)
        attempts = cblof_attempts(
            self.params["n_clusters"],
            self.params["alpha"],
            self.params["beta"],
            distinct_row_count(train),
        )
        for n_clusters, alpha, beta in attempts:
            detector = self.make_detector(len(train), seed, n_clusters, alpha, beta)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    detector.fit(train)
            except ValueError as err:
                if "Could not form valid cluster separation" in str(err):
                    continue
                raise
            return detector
        return None  # fewer than two distinct finished tasks: nothing to cluster
