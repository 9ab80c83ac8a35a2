"""PCA outlier detection (Shyu et al., 2003): eigenvalue-weighted distance in PC space."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.pca import PCA as PyodPCA


class PCA(OutlierDetectionMethod):
    name: ClassVar[str] = "PCA"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": Param(
            0.1,
            float,
            gt=0,
            le=0.5,
            doc="share of the training rows the detector takes as outliers (its score threshold)",
        ),
        "refit_growth": Param(
            0.1,
            float,
            ge=0,
            doc="refit once the finished tasks grew by this share since the last fit (0: whenever one more finished)",
        ),
    }
    drop_constant_training_columns: ClassVar[bool] = True  # zero eigenvalues otherwise

    def make_detector(self, n_train: int, seed: int) -> PyodPCA:
        from pyod.models.pca import PCA as PyodPCA

        return PyodPCA(contamination=self.params["contamination"], random_state=seed)
