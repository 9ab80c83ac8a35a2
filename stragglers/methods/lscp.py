"""LSCP (Zhao et al., 2019): locally selective combination of LOF detectors."""

from __future__ import annotations

from typing import Any, ClassVar

from pyod.models.lof import LOF as PyodLOF
from pyod.models.lscp import LSCP as PyodLSCP

from stragglers.methods._outlier import OutlierDetectionMethod, shrink_neighbours


class LSCP(OutlierDetectionMethod):
    name: ClassVar[str] = "LSCP"
    defaults: ClassVar[dict[str, Any]] = {
        "contamination": 0.1,
        # base detectors of the paper's code: LOF with 5 and 10 neighbours
        "lof_neighbors": [5, 10],
        "local_region_size": 30,  # PyOD default
        "refit_growth": 0.5,
    }

    def make_detector(self, n_train: int, seed: int) -> PyodLSCP:
        base = [PyodLOF(n_neighbors=shrink_neighbours(k, n_train))
                for k in self.params["lof_neighbors"]]
        return PyodLSCP(
            base,
            # the local region is a set of training neighbours: at most n_train of them
            local_region_size=min(int(self.params["local_region_size"]), n_train),
            contamination=self.params["contamination"],
            random_state=seed,
        )
