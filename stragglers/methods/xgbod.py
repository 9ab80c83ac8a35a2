"""XGBOD (Zhao & Hryniewicki, 2018): XGBoost on features augmented with outlier scores.

XGBOD is supervised. As in the paper's code, its labels come from the finished tasks'
observed latencies: a finished task is an outlier (1) when its latency is at or above the
straggler threshold, else an inlier (0). Until a straggler has finished there is only one
class and nothing is flagged. Running tasks are then classified by XGBOD's `predict`.

XGBOD augments the features with the scores of unsupervised detectors (TOS). PyOD's default
list has 41 of them (KNN and LOF at 8 neighbourhood sizes, 7 HBOS, 11 one-class SVMs, 7
isolation forests with 10-200 trees) and costs about a second per fit here;
tos_detectors="compact" (default) uses 12 of the same kinds (listed in `compact_tos`),
tos_detectors="pyod_default" restores PyOD's list.

Under the replay rule `xgbod: script` (`replay.protocol: paper`) it runs as the authors'
`code/run_od.py`: PyOD's default list whatever `tos_detectors` says, PyOD's default random
state (0), labels latency > tau (strict), and a fit on a single class too. PyOD's list's seven
isolation forests are grown from one another (stragglers/methods/_grown_forests.py): the
same forests for a third of the trees built. In either list, KNN and LOF of one neighbourhood
size share one neighbour search (sizes searching alike, one tree per set of rows), the
one-class SVMs call libsvm directly and share their kernel values, the HBOS histograms come
from one compiled call (stragglers/methods/_xgbod_members.py), the XGBoost classifier's
rounds run without `XGBClassifier.fit`'s per-round Python and its training caches are freed
with it (stragglers/methods/_xgb_training.py), and what the
replay never reads (the members' training thresholds, XGBOD's predictions of its training
rows) is computed only if read: the same scores and booster.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from stragglers.methods._outlier import OutlierDetectionMethod
from stragglers.methods.base import Checkpoint, Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from pyod.models.xgbod import XGBOD as PyodXGBOD

TOS_CHOICES = ("compact", "pyod_default")


def compact_tos(n_train: int, seed: int) -> tuple[list[Any], list[bool]]:
    """12 unsupervised detectors for XGBOD's augmented features, and their
    standardisation flags (True: fit on z-scored data, as PyOD's default list does)."""
    from pyod.models.hbos import HBOS as PyodHBOS
    from pyod.models.knn import KNN as PyodKNN
    from pyod.models.lof import LOF as PyodLOF
    from pyod.models.ocsvm import OCSVM as PyodOCSVM

    from stragglers.methods._isolation_scores import FastIForest

    detectors: list[Any] = []
    standardise: list[bool] = []
    for k in (1, 5, 10, 20):
        if k < n_train:
            detectors.append(PyodKNN(n_neighbors=k, method="largest"))
            standardise.append(True)
    for k in (5, 10, 20):
        if k < n_train:
            detectors.append(PyodLOF(n_neighbors=k))
            standardise.append(True)
    for n_bins in (10, 20):
        detectors.append(PyodHBOS(n_bins=n_bins))
        standardise.append(False)
    for nu in (0.1, 0.5):
        detectors.append(PyodOCSVM(nu=nu))
        standardise.append(True)
    # PyOD's IForest fitted and scored without scikit-learn's per-tree overhead (same forest)
    detectors.append(FastIForest(n_estimators=50, random_state=seed))
    standardise.append(False)
    return detectors, standardise


class XGBOD(OutlierDetectionMethod):
    name: ClassVar[str] = "XGBOD"
    lazy_modules: ClassVar[tuple[str, ...]] = (
        "stragglers.methods._pyod_kernels",
        "stragglers.methods._grown_forests",
        "stragglers.methods._xgbod_members",
        "stragglers.methods._platt_svm",
        "stragglers.methods._isolation_scores",
        "stragglers.methods._xgb_training",
        "stragglers.methods._rbf_kernel",
        "stragglers.methods._histograms",
    )
    protocol_rules: ClassVar[tuple[str, ...]] = ("xgbod",)
    defaults: ClassVar[dict[str, Any]] = {
        "n_estimators": Param(
            100, int, ge=1, doc="boosting rounds of the XGBoost classifier"
        ),  # PyOD defaults for the XGBoost classifier
        "max_depth": Param(3, int, ge=1, doc="depth of each tree"),
        "learning_rate": Param(0.1, float, gt=0, doc="boosting step size"),
        "tos_detectors": Param(
            "compact",
            str,
            choices=TOS_CHOICES,
            doc="the unsupervised detectors whose scores XGBoost reads: a compact set, or PyOD's 41",
        ),  # or "pyod_default" (41 detectors)
        "refit_growth": 0.5,
    }

    def __init__(self, params: dict[str, Any] | None = None, seed: int = 0):
        super().__init__(params, seed)
        if self.params["tos_detectors"] not in TOS_CHOICES:
            raise ValueError(
                f"method {self.name}: tos_detectors must be one of {list(TOS_CHOICES)}, "
                f"got {self.params['tos_detectors']!r}"
            )

    def make_detector(self, n_train: int, seed: int) -> PyodXGBOD:
        from stragglers.methods._pyod_kernels import cache_pyod_compilation
        from stragglers.methods._xgbod_members import LeanXGBOD

        cache_pyod_compilation()  # both lists include HBOS
        detectors, standardise = None, None  # PyOD's default list
        if self.params["tos_detectors"] == "compact" and self.rules.xgbod == "compact":
            detectors, standardise = compact_tos(n_train, seed)
        # PyOD's default list: its isolation forests grown from one another (same forests);
        # either list: KNN and LOF of one size share their neighbour search, OCSVM calls
        # libsvm directly (stragglers/methods/_xgbod_members.py)
        return LeanXGBOD(
            estimator_list=detectors,
            standardization_flag_list=standardise,
            contamination=self.params["contamination"],
            n_estimators=self.params["n_estimators"],
            max_depth=self.params["max_depth"],
            learning_rate=self.params["learning_rate"],
            # the script passes no random state: PyOD's default, 0 (its isolation forests' too)
            random_state=0 if self.rules.xgbod == "script" else seed,
            n_jobs=1,
        )

    def fit_detector(self, train: np.ndarray, checkpoint: Checkpoint, seed: int):
        if self.rules.xgbod == "script":
            # rule `xgbod: script`: the script labels latency > tau and fits a single class too
            labels = (checkpoint.finished_latency > self.job.straggler_threshold).astype(int)
        else:
            labels = (checkpoint.finished_latency >= self.job.straggler_threshold).astype(int)
            if labels.min() == labels.max():
                return None  # no finished straggler yet (or only stragglers): one class
        detector = self.make_detector(len(train), seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            detector.fit(train, labels)
        return detector
