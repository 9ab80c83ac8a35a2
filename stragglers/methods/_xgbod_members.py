"""XGBOD's unsupervised member detectors without PyOD's and scikit-learn's per-call overhead.

XGBOD (Zhao & Hryniewicki, 2018, Section 3.1) scores its training rows and every batch it
classifies with each of its detectors. PyOD's default list has KNN and LOF at the same eight
neighbourhood sizes, fitted on the same standardised rows: each pair fits the same
scikit-learn neighbour search and asks it the same query, once for KNN's distances and once
for LOF's reachability densities. Profiles of the `paper` replay found those queries, and the
input and parameter validation around them and around the eleven one-class SVMs' libsvm
calls, the largest part of XGBOD's fit and scoring.

`LeanKNN` and `LeanLOF` are PyOD's KNN ("largest") and LOF whose neighbour search is shared
through a `SharedNeighbours` per neighbourhood size and settings: fitted once per set of rows
and asked once per batch of rows, the scikit-learn calls each of them would make on its own
with the same arguments (`NearestNeighbors.fit`, then the KD or ball tree's `query` as
`kneighbors` makes it, or `kneighbors` itself for a brute-force search), so their distances
and neighbours are the same arrays. LOF's densities and ratios are then computed
with scikit-learn's operations (`LocalOutlierFactor.fit` and `score_samples`). The sizes
of one search setting also share one tree query of each set of rows (`WidestQueries`): the
widest size's, whose leading columns are a narrower size's query where no distances tie at
or before the cut (`leading_neighbours`); with ties a query for more neighbours may list
other tied neighbours, and the narrower size asks its own tree.

`LeanOCSVM` is PyOD's OCSVM with an RBF kernel calling libsvm as OneClassSVM does
(stragglers/methods/_platt_svm.py), with the same seed drawn from numpy's global random state;
the SVMs of one list, fitted on the same rows, fit from one matrix of the training rows'
kernel values and score a batch from one matrix of its kernel values
(stragglers/methods/_rbf_kernel.py): libsvm's models and sums of the same values.
`LeanHBOS` is PyOD's HBOS computing the same histograms (all features' in one compiled call,
stragglers/methods/_histograms.py) and compiled scores without the array checks around them
(rows that are already a finite float64 array).

`LeanXGBOD` fits PyOD's XGBOD with these members and its classifier through
`fit_classifier` (stragglers/methods/_xgb_training.py). PyOD's fit also computes, for every
member, its training threshold, labels, mean and deviation, and, for XGBOD itself, its
classifier's scores and labels of the training rows; the replay reads none of them (it calls
`predict` on new rows, which reads the members' `decision_function` only), so they are
computed when first read (`DeferredThreshold`, `DeferredAttributes`), with PyOD's values.

Each falls back to PyOD's own code for what it does not cover (rows that are not a finite
float64 array at fit, other settings). tests/test_xgbod_members.py checks them against PyOD
value for value.
"""

from __future__ import annotations

import copy
import math
import numbers
from typing import Any

import numpy as np
import pyod.models.hbos as pyod_hbos
from pyod.models.hbos import HBOS as PyodHBOS
from pyod.models.knn import KNN as PyodKNN
from pyod.models.lof import LOF as PyodLOF
from pyod.models.ocsvm import OCSVM as PyodOCSVM
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

from stragglers.methods._grown_forests import (
    DeferredAttributes,
    DeferredThreshold,
    GrownXGBOD,
    plain_rows,
    rows_key,
)
from stragglers.methods._histograms import density_histograms
from stragglers.methods._platt_svm import OneClassRbfSVM, fit_one_class_rbf
from stragglers.methods._rbf_kernel import RbfKernelRows

# the detectors' constructor parameters (get_params reads each one's signature again)
KNN_PARAMS = tuple(PyodKNN().get_params(deep=False))
LOF_PARAMS = tuple(PyodLOF().get_params(deep=False))
OCSVM_PARAMS = tuple(PyodOCSVM().get_params(deep=False))
HBOS_PARAMS = tuple(PyodHBOS().get_params(deep=False))

# the neighbour search settings PyOD's KNN and LOF both pass to scikit-learn
SEARCH_SETTINGS = ("algorithm", "leaf_size", "metric", "p", "metric_params", "n_jobs")


def reachability_density(
    distances: np.ndarray, indices: np.ndarray, fit_distances: np.ndarray, n_neighbors: int
) -> np.ndarray:
    """LocalOutlierFactor._local_reachability_density: of rows whose neighbours among the
    training rows are `indices` at `distances`, the training rows' own neighbour distances
    being `fit_distances`."""
    dist_k = fit_distances[indices, n_neighbors - 1]
    reach_dist_array = np.maximum(distances, dist_k)
    # 1e-10 as scikit-learn: no division by zero when duplicates outnumber the neighbours
    return 1.0 / (np.mean(reach_dist_array, axis=1) + 1e-10)


def leave_self_out(
    distances: np.ndarray, indices: np.ndarray, n_neighbors: int
) -> tuple[np.ndarray, np.ndarray]:
    """KNeighborsMixin.kneighbors(X=None)'s last step: of each training row's n_neighbors + 1
    nearest training rows, all but the row itself, or all but the first when the row is not
    among them (more duplicates of it than neighbours)."""
    n_queries = indices.shape[0]
    sample_mask = indices != np.arange(n_queries)[:, None]
    dup_gr_nbrs = np.all(sample_mask, axis=1)
    sample_mask[:, 0][dup_gr_nbrs] = False
    return (
        np.reshape(distances[sample_mask], (n_queries, n_neighbors)),
        np.reshape(indices[sample_mask], (n_queries, n_neighbors)),
    )


def leading_neighbours(
    widest: tuple[np.ndarray, np.ndarray], n_columns: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """A KD or ball tree's `query(rows, n_columns)` read off its wider query `widest` of the
    same rows: its leading columns, when each row's first n_columns + 1 distances strictly
    increase. The tree keeps the smallest distances, each computed for its pair alone, so
    without a tie at or before the cut the narrower query lists the same neighbours at the
    same distances in the same order; with a tie it may list other tied neighbours (None:
    ask the tree)."""
    distances, indices = widest
    if distances.shape[1] <= n_columns:
        return None
    head = distances[:, : n_columns + 1]
    if not (head[:, 1:] > head[:, :-1]).all():
        return None
    return (
        np.ascontiguousarray(distances[:, :n_columns]),
        np.ascontiguousarray(indices[:, :n_columns]),
    )


class WidestQueries:
    """The tree queries of the widest neighbourhood among the sizes that share search
    settings: of the rows a search was fitted on, and of the last batch, each asked once
    for every size (`leading_neighbours`) instead of once per size."""

    def __init__(self) -> None:
        self.widest_size = 0
        self._answers: dict[str, tuple[tuple, type, tuple[np.ndarray, np.ndarray]]] = {}
        self._searches: dict[bool | None, tuple[tuple, NearestNeighbors]] = {}

    def fitted_search(
        self, X: np.ndarray, key: tuple, n_neighbors: int, settings: dict[str, Any]
    ) -> NearestNeighbors:
        """`NearestNeighbors(n_neighbors=n_neighbors, radius=1.0, **settings).fit(X)` (X plain
        rows, `key` their rows_key): a copy of the search another size fitted on the same
        rows when its fit is the same one. NearestNeighbors._fit reads n_neighbors only to
        choose brute force with algorithm "auto" (n_neighbors at least half the rows), and
        the searches here are always asked with their size, so the sizes on the same side
        of that bound share one tree; each copy carries its own n_neighbors."""
        if not isinstance(n_neighbors, numbers.Integral) or isinstance(n_neighbors, bool):
            # scikit-learn's parameter validation (and its error) at every fit
            return NearestNeighbors(n_neighbors=n_neighbors, radius=1.0, **settings).fit(X)
        halves = n_neighbors >= X.shape[0] // 2 if settings["algorithm"] == "auto" else None
        cached = self._searches.get(halves)
        if cached is not None and cached[0] == key and n_neighbors > 0:
            search = copy.copy(cached[1])
            search.n_neighbors = n_neighbors
            return search
        search = NearestNeighbors(n_neighbors=n_neighbors, radius=1.0, **settings).fit(X)
        self._searches[halves] = (key, search)
        return search

    def query(
        self, tree: Any, n_fit: int, rows: np.ndarray, key: tuple, n_columns: int, purpose: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """`tree.query(rows, n_columns, True)` of a tree fitted on n_fit rows: read off the
        widest query of the same rows on a tree of the same kind (built on the same rows
        with the same settings: the same tree) when it can be, else asked. `purpose`: the
        rows the tree was fitted on ("fit", each row its own nearest too) or a "batch"."""
        width = min(self.widest_size + (1 if purpose == "fit" else 0), n_fit)
        cached = self._answers.get(purpose)
        if cached is None or cached[0] != key or cached[1] is not type(tree):
            if width < n_columns:
                return tree.query(rows, n_columns, True)
            cached = (key, type(tree), tree.query(rows, width, True))
            self._answers[purpose] = cached
        widest = cached[2]
        if widest[0].shape[1] == n_columns:
            return widest
        answer = leading_neighbours(widest, n_columns)
        return tree.query(rows, n_columns, True) if answer is None else answer


class NeighbourFit:
    """A neighbour search fitted on one set of rows, its neighbours of those rows (each row
    left out of its own), and the last batch it was asked about.

    A search scikit-learn runs on a KD or ball tree is asked through the tree directly, as
    `kneighbors` asks it (one slice of rows with one job), without `kneighbors`'s validation
    and joblib dispatch around it; a brute-force search (many features, or neighbourhoods of
    half the rows or more) through `kneighbors`."""

    def __init__(
        self, search: NearestNeighbors, n_neighbors: int, widest: WidestQueries | None = None
    ) -> None:
        self.search = search
        self.n_neighbors = n_neighbors
        self.widest = widest
        self._fit_key: tuple | None = None
        self._tree = search._tree if search._fit_method in ("kd_tree", "ball_tree") else None
        if (
            self._tree is None
            or search.n_jobs not in (None, 1)
            or n_neighbors >= len(search._fit_X)
        ):
            self.distances, self.indices = search.kneighbors(n_neighbors=n_neighbors)
        else:
            distances, indices = self._tree_query(search._fit_X, n_neighbors + 1, "fit")
            self.distances, self.indices = leave_self_out(distances, indices, n_neighbors)
        self._density: np.ndarray | None = None
        self._query_key: tuple | None = None
        self._query: tuple[np.ndarray, np.ndarray] | None = None

    def _tree_query(
        self, rows: np.ndarray, n_columns: int, purpose: str, key: tuple | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The tree's `query(rows, n_columns)`, through the widest query when shared."""
        if self.widest is None:
            return self._tree.query(rows, n_columns, True)
        if self._fit_key is None:
            self._fit_key = rows_key(self.search._fit_X)
        # a batch's answer is the tree's: the rows it was fitted on are part of its key
        key = (self._fit_key, rows_key(rows) if key is None else key)
        n_fit = len(self.search._fit_X)
        return self.widest.query(self._tree, n_fit, rows, key, n_columns, purpose)

    @property
    def density(self) -> np.ndarray:
        """The training rows' reachability densities (LocalOutlierFactor's `_lrd`)."""
        if self._density is None:
            self._density = reachability_density(
                self.distances, self.indices, self.distances, self.n_neighbors
            )
        return self._density

    def query(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`kneighbors(X, n_neighbors)` of the search, asked once per batch (plain rows)."""
        key = rows_key(X)
        if key != self._query_key:
            search = self.search
            if (
                self._tree is None
                or search.n_jobs not in (None, 1)
                or X.shape[1] != search.n_features_in_
                or self.n_neighbors > len(search._fit_X)
            ):
                self._query = search.kneighbors(X, n_neighbors=self.n_neighbors)
            else:
                self._query = self._tree_query(X, self.n_neighbors, "batch", key)
            self._query_key = key
        return self._query


class SharedNeighbours:
    """The neighbour search of one neighbourhood size and settings, fitted once per set of
    rows for every detector that holds it."""

    def __init__(
        self, n_neighbors: int, settings: dict[str, Any], widest: WidestQueries | None = None
    ) -> None:
        self.n_neighbors = n_neighbors
        self.settings = settings
        self.widest = widest
        self._key: tuple | None = None
        self._fit: NeighbourFit | None = None

    def fit(self, X: np.ndarray) -> NeighbourFit:
        key = rows_key(X)
        if key != self._key or self._fit is None:
            # NearestNeighbors as PyOD's KNN builds it (radius only matters to radius queries)
            if self.widest is None:
                search = NearestNeighbors(
                    n_neighbors=self.n_neighbors, radius=1.0, **self.settings
                ).fit(X)
            else:
                search = self.widest.fitted_search(X, key, self.n_neighbors, self.settings)
            self._fit = NeighbourFit(search, self.n_neighbors, self.widest)
            self._key = key
        return self._fit


class LeanKNN(DeferredThreshold, PyodKNN):
    """PyOD's KNN ("largest") whose neighbour search comes from `neighbours`."""

    # the search shared with the other detectors of its size (set by `lean_members`), and
    # the fit it gave (None: PyOD's own fit)
    neighbours: SharedNeighbours | None = None
    neighbour_fit_: NeighbourFit | None = None

    def fit(self, X, y=None):
        self.neighbour_fit_ = None
        if self.neighbours is None or self.method != "largest" or not plain_rows(X):
            return super().fit(X, y)
        self._set_n_classes(y)
        # the shared search is not made the detector's `neigh_`: PyOD's fit refits that one
        self.neighbour_fit_ = self.neighbours.fit(X)
        self.decision_scores_ = self.neighbour_fit_.distances[:, -1].ravel()
        self._process_decision_scores()
        return self

    def decision_function(self, X):
        if self.neighbour_fit_ is None:
            return super().decision_function(X)
        if plain_rows(X):
            distances, _ = self.neighbour_fit_.query(X)
        else:
            search = self.neighbour_fit_.search
            distances, _ = search.kneighbors(check_array(X), n_neighbors=self.n_neighbors)
        return distances[:, -1].ravel()


class LeanLOF(DeferredThreshold, PyodLOF):
    """PyOD's LOF whose neighbour search comes from `neighbours`."""

    # the search shared with the other detectors of its size (set by `lean_members`), and
    # the fit it gave (None: PyOD's own fit)
    neighbours: SharedNeighbours | None = None
    neighbour_fit_: NeighbourFit | None = None

    def fit(self, X, y=None):
        self.neighbour_fit_ = None
        # LocalOutlierFactor shrinks a neighbourhood of the rows' size or more: PyOD's own
        if (
            self.neighbours is None
            or not self.novelty
            or not plain_rows(X)
            or self.n_neighbors >= X.shape[0]
        ):
            return super().fit(X, y)
        self._set_n_classes(y)
        fitted = self.neighbours.fit(X)
        density = fitted.density
        lrd_ratios_array = density[fitted.indices] / density[:, np.newaxis]
        negative_outlier_factor = -np.mean(lrd_ratios_array, axis=1)
        self.neighbour_fit_ = fitted
        self.decision_scores_ = negative_outlier_factor.ravel() * -1  # invert_order
        self._process_decision_scores()
        return self

    def decision_function(self, X):
        if self.neighbour_fit_ is None:
            return super().decision_function(X)
        fitted = self.neighbour_fit_
        if plain_rows(X):
            distances, indices = fitted.query(X)
        else:
            # PyOD's and score_samples' validations, then score_samples' query
            X = check_array(check_array(X, accept_sparse=True), accept_sparse="csr")
            distances, indices = fitted.search.kneighbors(X, n_neighbors=self.n_neighbors)
            if X.dtype == np.float32:
                distances = distances.astype(X.dtype, copy=False)
        X_lrd = reachability_density(distances, indices, fitted.distances, self.n_neighbors)
        lrd_ratios_array = fitted.density[indices] / X_lrd[:, np.newaxis]
        return (-np.mean(lrd_ratios_array, axis=1)).ravel() * -1  # invert_order


class LeanOCSVM(DeferredThreshold, PyodOCSVM):
    """PyOD's OCSVM with an RBF kernel, libsvm called as OneClassSVM calls it; its decision
    values from the kernel values it shares with the other SVMs of its list (`kernel_rows`,
    set by `lean_members`) when it has them."""

    kernel_rows: RbfKernelRows | None = None

    def _decisions(self, X: np.ndarray) -> np.ndarray:
        """OneClassSVM.decision_function(X) of the fitted model (X finite float64): from the
        shared kernel values of X with the training rows, else by libsvm."""
        if self.kernel_rows is not None:
            decisions = self.kernel_rows.decision_function(X, self.training_rows_, self.model_)
            if decisions is not None:
                return decisions
        return self.model_.decision_function(X).ravel()

    def _settings_valid(self) -> bool:
        """Whether OneClassSVM's parameter validation accepts the settings (else PyOD's own
        fit raises its error)."""
        return (
            isinstance(self.nu, numbers.Real)
            and 0 < self.nu <= 1
            and (
                self.gamma in ("scale", "auto")
                or (isinstance(self.gamma, numbers.Real) and self.gamma >= 0)
            )
            and isinstance(self.tol, numbers.Real)
            and self.tol > 0
            and isinstance(self.cache_size, numbers.Real)
            and self.cache_size > 0
            and isinstance(self.max_iter, numbers.Integral)
            and self.max_iter >= -1
            and isinstance(self.degree, numbers.Integral)
            and self.degree >= 0
            and isinstance(self.coef0, numbers.Real)
            and isinstance(self.shrinking, bool | np.bool_)
        )

    def fit(self, X, y=None, sample_weight=None, **params):
        self.model_: OneClassRbfSVM | None = None
        if (
            self.kernel != "rbf"
            or self.verbose
            or sample_weight is not None
            or params
            or not plain_rows(X)
            or not self._settings_valid()
        ):
            return super().fit(X, y, sample_weight=sample_weight, **params)
        self._set_n_classes(y)
        X = np.ascontiguousarray(X)
        # the OCSVMs of one list fit on the same rows: their kernel values computed once
        fit = fit_one_class_rbf if self.kernel_rows is None else self.kernel_rows.fit_one_class
        self.model_ = fit(
            X,
            nu=self.nu,
            gamma=self.gamma,
            tol=self.tol,
            shrinking=self.shrinking,
            cache_size=self.cache_size,
            max_iter=self.max_iter,
            degree=self.degree,
            coef0=self.coef0,
        )
        self.n_features_in_ = X.shape[1]
        self.training_rows_ = X
        self.decision_scores_ = self._decisions(X) * -1  # invert_order
        self._process_decision_scores()
        return self

    def decision_function(self, X):
        if getattr(self, "model_", None) is None:
            return super().decision_function(X)
        if not plain_rows(X):
            # PyOD's validation, then OneClassSVM's (dense rows only: it was fitted on dense)
            X = check_array(
                check_array(X),
                dtype=np.float64,
                order="C",
                accept_sparse="csr",
                accept_large_sparse=False,
            )
            if not isinstance(X, np.ndarray):
                raise ValueError("cannot use sparse input in 'OneClassSVM' trained on dense data")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but OneClassSVM is expecting "
                f"{self.n_features_in_} features as input."
            )
        return self._decisions(X) * -1  # invert_order


def isclose_to_one(total: float, atol: float) -> bool:
    """`np.isclose(1, total, atol=atol)` for a float `total` (its default relative tolerance,
    1e-05): the same double comparisons without building arrays."""
    return (abs(1.0 - total) <= atol + 1e-05 * abs(total) and math.isfinite(total)) or total == 1


class LeanHBOS(DeferredThreshold, PyodHBOS):
    """PyOD's HBOS with a number of bins: rows that are a finite float64 array used as
    given (no check_array), the scores' order inverted and the histograms' areas checked
    without scikit-learn's and numpy's per-call array checks; the same histograms and
    compiled scores."""

    def fit(self, X, y=None):
        if type(self.n_bins) is not int or self.n_bins <= 2 or not plain_rows(X):
            return super().fit(X, y)
        self._set_n_classes(y)
        n_features = X.shape[1]
        densities, edges, computed = density_histograms(X, self.n_bins)
        self.hist_ = np.zeros([self.n_bins, n_features])
        self.bin_edges_ = np.zeros([self.n_bins + 1, n_features])
        for i in range(n_features):
            if computed:  # np.histogram's values, all columns in one call
                self.hist_[:, i], self.bin_edges_[:, i] = densities[:, i], edges[:, i]
            else:  # numpy's own (and its error, in PyOD's order)
                self.hist_[:, i], self.bin_edges_[:, i] = np.histogram(
                    X[:, i], bins=self.n_bins, density=True
                )
            # PyOD's check that the histogram's area is 1 (an AssertionError as PyOD's)
            area = float(np.sum(self.hist_[:, i] * np.diff(self.bin_edges_[:, i])))
            assert isclose_to_one(area, atol=0.1)
        outlier_scores = pyod_hbos._calculate_outlier_scores(
            X, self.bin_edges_, self.hist_, self.n_bins, self.alpha, self.tol
        )
        self.decision_scores_ = np.sum(outlier_scores, axis=1) * -1  # invert_order
        self._process_decision_scores()
        return self

    def decision_function(self, X):
        if type(self.n_bins) is not int or self.n_bins <= 2 or not plain_rows(X):
            return super().decision_function(X)
        check_is_fitted(self, ["hist_", "bin_edges_"])
        outlier_scores = pyod_hbos._calculate_outlier_scores(
            X, self.bin_edges_, self.hist_, self.n_bins, self.alpha, self.tol
        )
        return np.sum(outlier_scores, axis=1) * -1  # invert_order


def lean_members(estimators: list[Any]) -> list[Any]:
    """`estimators` (a detector list) with every PyOD KNN, LOF, HBOS and OCSVM replaced by its lean
    equivalent of the same parameters; KNN and LOF of the same neighbourhood size and search
    settings share one SharedNeighbours, all sizes of the same settings one WidestQueries,
    and the OCSVMs one RbfKernelRows."""
    shared: dict[tuple, SharedNeighbours] = {}
    widest: dict[str, WidestQueries] = {}
    kernel_rows = RbfKernelRows()

    def neighbours(estimator) -> SharedNeighbours:
        settings = {name: getattr(estimator, name) for name in SEARCH_SETTINGS}
        settings_key = repr(sorted(settings.items()))
        queries = widest.setdefault(settings_key, WidestQueries())
        if isinstance(estimator.n_neighbors, numbers.Integral):
            queries.widest_size = max(queries.widest_size, int(estimator.n_neighbors))
        key = (estimator.n_neighbors, settings_key)
        if key not in shared:
            shared[key] = SharedNeighbours(estimator.n_neighbors, settings, queries)
        return shared[key]

    out = []
    for estimator in estimators:
        if type(estimator) is PyodKNN:
            lean = LeanKNN(**{name: getattr(estimator, name) for name in KNN_PARAMS})
            lean.neighbours = neighbours(estimator)
            estimator = lean
        elif type(estimator) is PyodLOF:
            lean = LeanLOF(**{name: getattr(estimator, name) for name in LOF_PARAMS})
            lean.neighbours = neighbours(estimator)
            estimator = lean
        elif type(estimator) is PyodHBOS:
            estimator = LeanHBOS(**{name: getattr(estimator, name) for name in HBOS_PARAMS})
        elif type(estimator) is PyodOCSVM:
            estimator = LeanOCSVM(**{name: getattr(estimator, name) for name in OCSVM_PARAMS})
            estimator.kernel_rows = kernel_rows
        out.append(estimator)
    return out


# what PyOD's XGBOD.fit sets from its own training rows' predictions
TRAINING_PREDICTIONS = ("decision_scores_", "labels_")


class LeanXGBOD(DeferredAttributes, GrownXGBOD):
    """PyOD's XGBOD whose detector list (its default one, isolation forests grown from one
    another, or the list given to it) has lean KNN, LOF, HBOS and OCSVM members
    (`lean_members`), whose members' training thresholds are computed only if read
    (`DeferredThreshold`), whose classifier is fitted by `fit_classifier`, and whose own
    training scores and labels (its classifier's predictions of the training rows) are
    computed when first read: the replay reads only `predict` of new rows."""

    def _validate_estimator(self, X):
        n_detectors = super()._validate_estimator(X)
        self.estimator_list_ = lean_members(self.estimator_list_)
        for estimator in self.estimator_list_:
            if isinstance(estimator, DeferredThreshold):
                estimator.defer_threshold = True
        return n_detectors

    def fit(self, X, y):
        """PyOD's XGBOD.fit: the same checks, members, augmented rows and classifier."""
        from pyod.utils.utility import standardizer
        from sklearn.utils import check_X_y
        from xgboost import XGBClassifier

        from stragglers.methods._xgb_training import fit_classifier

        X, y = check_X_y(X, y)
        X = check_array(X)
        self._set_n_classes(y)
        self.n_detector_ = self._validate_estimator(X)
        self.X_train_add_ = np.zeros([X.shape[0], self.n_detector_])
        X_norm, self._scalar = standardizer(X, keep_scalar=True)
        for ind, estimator in enumerate(self.estimator_list_):
            estimator.fit(X_norm if self.standardization_flag_list_[ind] else X)
            self.X_train_add_[:, ind] = estimator.decision_scores_
        self.X_train_new_ = np.concatenate((X, self.X_train_add_), axis=1)
        self.clf_ = XGBClassifier(
            max_depth=self.max_depth,
            learning_rate=self.learning_rate,
            n_estimators=self.n_estimators,
            silent=self.silent,
            objective=self.objective,
            booster=self.booster,
            n_jobs=self.n_jobs,
            nthread=self.nthread,
            gamma=self.gamma,
            min_child_weight=self.min_child_weight,
            max_delta_step=self.max_delta_step,
            subsample=self.subsample,
            colsample_bytree=self.colsample_bytree,
            colsample_bylevel=self.colsample_bylevel,
            reg_alpha=self.reg_alpha,
            reg_lambda=self.reg_lambda,
            scale_pos_weight=self.scale_pos_weight,
            base_score=self.base_score,
            random_state=self.random_state,
            **self.kwargs,
        )
        # its training caches are left to be freed with it: the same model (a refit at every
        # checkpoint skips XGBoost's reset of each fit)
        fit_classifier(self.clf_, self.X_train_new_, y, reset=False)
        self._defer(TRAINING_PREDICTIONS, "_predict_training_rows")
        return self

    def _predict_training_rows(self) -> None:
        """The end of PyOD's XGBOD.fit: its classifier's scores and labels of the rows."""
        self.decision_scores_ = self.clf_.predict_proba(self.X_train_new_)[:, 1]
        self.labels_ = self.clf_.predict(self.X_train_new_).ravel()

    def _augmented_rows(self, X) -> np.ndarray:
        """PyOD's XGBOD.predict's rows for its classifier: X and its members' scores of X
        (fitted: its classifier and scaler; the training predictions are not needed)."""
        check_is_fitted(self, ["clf_", "_scalar"])
        X = check_array(X)
        return np.concatenate((X, self._generate_new_features(X)), axis=1)

    def decision_function(self, X):
        return self.clf_.predict_proba(self._augmented_rows(X))[:, 1].ravel()

    def predict(self, X):
        return self.clf_.predict(self._augmented_rows(X)).ravel()
