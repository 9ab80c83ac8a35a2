"""PCA outlier detection (Shyu et al., 2003): eigenvalue-weighted distance in PC space."""

from __future__ import annotations

from typing import Any, ClassVar

from pyod.models.pca import PCA as PyodPCA

from stragglers.methods._outlier import OutlierDetectionMethod


class PCA(OutlierDetectionMethod):
    name: ClassVar[str] = "PCA"
    defaults: ClassVar[dict[str, Any]] = {"contamination": 0.1, "refit_growth": 0.1}
    drop_constant_training_columns: ClassVar[bool] = True  # zero eigenvalues otherwise

    def make_detector(self, n_train: int, seed: int) -> PyodPCA:
        return PyodPCA(contamination=self.params["contamination"], random_state=seed)
