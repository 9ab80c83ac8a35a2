"""LSCP (Zhao et al., 2019): locally selective combination of LOF detectors; its per-test-row
loop (local regions, correlations, competent detectors) runs for all rows at once, without
scipy's and scikit-learn's per-call overhead, and a refit finds its training rows' nearest
neighbours among the last fit's and the new rows (stragglers/methods/_lscp_kernel.py), and its
LOFs share their neighbour searches (stragglers/methods/_xgbod_members.py): same numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import JobInfo, Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.lscp import LSCP as PyodLSCP


def shared_search_lofs(sizes: list[int]) -> list[Any]:
    """PyOD's LOFs of these neighbourhood sizes, lean (stragglers/methods/_xgbod_members.py):
    their sizes share one tree and one query of each set of rows, and their training
    thresholds, which LSCP never reads, are computed only if read."""
    from pyod.models.lof import LOF as PyodLOF

    from stragglers.methods._xgbod_members import lean_members

    lofs = lean_members([PyodLOF(n_neighbors=k) for k in sizes])
    for lof in lofs:
        lof.defer_threshold = True
    return lofs


class LSCP(OutlierDetectionMethod):
    name: ClassVar[str] = "LSCP"
    defaults: ClassVar[dict[str, Any]] = {
        # base detectors of the paper's code: LOF with 5 and 10 neighbours
        "lof_neighbors": Param(
            [5, 10], list, items=int, ge=1, doc="n_neighbors of each base LOF detector"
        ),
        "local_region_size": Param(
            30, int, ge=1, doc="training neighbours that make a task's local region"
        ),  # PyOD default
        "refit_growth": 0.5,
    }

    # the local regions, correlations and competent detectors, and the lean LOFs (imported
    # where used)
    lazy_modules: ClassVar[tuple[str, ...]] = (
        "stragglers.methods._lscp_kernel",
        "stragglers.methods._xgbod_members",
        "stragglers.methods._grown_forests",
    )

    def start_job(self, job: JobInfo) -> None:
        super().start_job(job)
        self._neighbour_tables = None  # the job's fits' nearest neighbours (NeighbourTables)

    def make_detector(self, n_train: int, seed: int) -> PyodLSCP:
        from stragglers.methods._lscp_kernel import FastLSCP, NeighbourTables

        if getattr(self, "_neighbour_tables", None) is None:
            self._neighbour_tables = NeighbourTables()

        base = shared_search_lofs(
            [self.neighbours(k, n_train) for k in self.params["lof_neighbors"]]
        )
        # the local region is a set of training neighbours: at most n_train of them
        region = self.neighbours(self.params["local_region_size"], n_train + 1)
        detector = FastLSCP(
            base,
            local_region_size=region,
            contamination=self.params["contamination"],
            random_state=seed,
        )
        # a refit's training rows are mostly the last fit's: their regions' nearest
        # neighbours are found among the last ones and the new rows
        detector.neighbour_tables = self._neighbour_tables
        return detector
