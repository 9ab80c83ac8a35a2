"""PCA outlier detection (Shyu et al., 2003): eigenvalue-weighted distance in PC space."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.pca import PCA as PyodPCA


class PCA(OutlierDetectionMethod):
    name: ClassVar[str] = "PCA"
    defaults: ClassVar[dict[str, Any]] = {
        "refit_growth": 0.1,
    }
    drop_constant_training_columns: ClassVar[bool] = True  # zero eigenvalues otherwise

    def make_detector(self, n_train: int, seed: int) -> PyodPCA:
        from pyod.models.pca import PCA as PyodPCA

        return PyodPCA(contamination=self.params["contamination"], random_state=seed)
