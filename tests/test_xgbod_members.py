"""XGBOD's lean members (stragglers/methods/_xgbod_members.py) give PyOD's KNN, LOF and
OCSVM scores bit for bit, and XGBOD with them PyOD's XGBOD: the same augmented features,
booster and predictions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from stragglers.methods._grown_forests import rows_key
from stragglers.methods._xgbod_members import (
    LeanHBOS,
    LeanKNN,
    LeanLOF,
    LeanOCSVM,
    LeanXGBOD,
    SharedNeighbours,
    WidestQueries,
    isclose_to_one,
    leading_neighbours,
    lean_members,
)

K_RANGE = (1, 3, 5, 10, 20, 30, 40, 50)  # PyOD's default XGBOD list
NU_RANGE = (0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99)


def _rows(rng: np.random.Generator, n: int, d: int, kind: str) -> np.ndarray:
    """Rows of `kind`: normal, with ties (values on a coarse grid), duplicate rows, a
    constant column, or all rows equal."""
    X = rng.normal(size=(n, d))
    if kind == "ties":
        X = np.round(X * 2) / 2
    elif kind == "duplicates":
        X[n // 2 :] = X[: n - n // 2]
    elif kind == "constant_column":
        X[:, 0] = 3.0
    elif kind == "all_equal":
        X[:] = X[0]
    return X


KINDS = ("normal", "ties", "duplicates", "constant_column", "all_equal")
# every kind of rows at small sizes (2-5 rows) and a real job's; ties at the largest, and
# with more than 15 features (scikit-learn's brute-force search)
CASES = (
    *[(shape, kind) for shape in ((2, 1), (3, 2), (5, 3), (40, 5)) for kind in KINDS],
    ((12, 4), "ties"),
    ((150, 6), "ties"),
    ((150, 6), "duplicates"),
    ((300, 4), "normal"),
    ((30, 17), "normal"),
    ((30, 17), "ties"),
)


# the search settings of PyOD's KNN and LOF
PYOD_SEARCH = {
    "algorithm": "auto",
    "leaf_size": 30,
    "metric": "minkowski",
    "p": 2,
    "metric_params": None,
    "n_jobs": 1,
}


def _lean(detector, neighbours: SharedNeighbours):
    detector.neighbours = neighbours
    return detector


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize(("shape", "kind"), CASES)
def test_lean_knn_and_lof_equal_pyods(shape, kind):
    """For every neighbourhood size below the rows' count: the training scores and the
    scores of new rows (and of the training rows themselves) are PyOD's, KNN and LOF of
    one size sharing one search; the brute-force searches (many features, large k) too."""
    from pyod.models.knn import KNN
    from pyod.models.lof import LOF

    n, d = shape
    rng = np.random.default_rng(n * 31 + d + len(kind))
    X = _rows(rng, n, d, kind)
    batches = (_rows(rng, 7, d, kind), X, np.round(rng.normal(size=(n + 3, d))))
    for k in [k for k in K_RANGE if k < n]:
        shared = SharedNeighbours(k, PYOD_SEARCH)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            knn, lof = KNN(n_neighbors=k, method="largest").fit(X), LOF(n_neighbors=k).fit(X)
            lean_knn = _lean(LeanKNN(n_neighbors=k), shared).fit(X)
            lean_lof = _lean(LeanLOF(n_neighbors=k), shared).fit(X)
        assert lean_knn.neighbour_fit_ is lean_lof.neighbour_fit_
        assert _same(lean_knn.decision_scores_, knn.decision_scores_)
        assert _same(lean_lof.decision_scores_, lof.decision_scores_)
        assert lean_knn.threshold_ == knn.threshold_ and lean_lof.threshold_ == lof.threshold_
        for batch in batches:
            assert _same(lean_knn.decision_function(batch), knn.decision_function(batch))
            assert _same(lean_lof.decision_function(batch), lof.decision_function(batch))
        # rows in another form take the library's validation
        as_list = batches[0].tolist()
        assert _same(lean_knn.decision_function(as_list), knn.decision_function(as_list))
        assert _same(lean_lof.decision_function(as_list), lof.decision_function(as_list))


def test_shared_search_refits_on_new_rows_and_keeps_old_fits():
    """A member fitted on other rows gets its own search; the one fitted before keeps its."""
    from pyod.models.knn import KNN

    rng = np.random.default_rng(5)
    X1, X2, test = rng.normal(size=(30, 3)), rng.normal(size=(30, 3)), rng.normal(size=(9, 3))
    shared = SharedNeighbours(5, PYOD_SEARCH)
    first = _lean(LeanKNN(n_neighbors=5), shared).fit(X1)
    second = _lean(LeanKNN(n_neighbors=5), shared).fit(X2)
    assert first.neighbour_fit_ is not second.neighbour_fit_
    assert _same(first.decision_function(test), KNN(n_neighbors=5).fit(X1).decision_function(test))
    assert _same(second.decision_function(test), KNN(n_neighbors=5).fit(X2).decision_function(test))
    # the same rows again, as another array: the same fit
    assert (
        _lean(LeanKNN(n_neighbors=5), shared).fit(X2.copy()).neighbour_fit_ is second.neighbour_fit_
    )
    # a changed batch in the same array object is asked again
    batch = test.copy()
    before = first.decision_function(batch)
    batch[0] += 5.0
    assert _same(
        first.decision_function(batch), KNN(n_neighbors=5).fit(X1).decision_function(batch)
    )
    assert not _same(before, first.decision_function(batch))


def test_lean_neighbours_fall_back_to_pyod():
    """Sizes of the rows' count or more (PyOD's LOF shrinks them, its KNN raises), other
    methods and rows that are not finite float64 arrays: PyOD's own code."""
    from pyod.models.knn import KNN
    from pyod.models.lof import LOF

    rng = np.random.default_rng(8)
    X = rng.normal(size=(6, 2))
    test = rng.normal(size=(4, 2))
    shared = SharedNeighbours(10, PYOD_SEARCH)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lean_lof = _lean(LeanLOF(n_neighbors=10), shared).fit(X)
        assert lean_lof.neighbour_fit_ is None
        assert _same(
            lean_lof.decision_function(test), LOF(n_neighbors=10).fit(X).decision_function(test)
        )
        with pytest.raises(ValueError) as theirs:
            KNN(n_neighbors=10).fit(X)
        with pytest.raises(ValueError) as ours:
            _lean(LeanKNN(n_neighbors=10), shared).fit(X)
        assert str(ours.value) == str(theirs.value)
        mean = _lean(LeanKNN(n_neighbors=3, method="mean"), shared).fit(X)
        assert mean.neighbour_fit_ is None
        assert _same(
            mean.decision_scores_, KNN(n_neighbors=3, method="mean").fit(X).decision_scores_
        )
        as_float32 = X.astype(np.float32)
        lean = _lean(LeanKNN(n_neighbors=3), shared).fit(as_float32)
        assert lean.neighbour_fit_ is None
        assert _same(lean.decision_scores_, KNN(n_neighbors=3).fit(as_float32).decision_scores_)
        with_nan = X.copy()
        with_nan[0, 0] = np.nan
        with pytest.raises(ValueError):
            _lean(LeanLOF(n_neighbors=3), shared).fit(with_nan)


@pytest.mark.parametrize(("shape", "kind"), CASES)
def test_lean_ocsvm_equals_pyods_and_draws_the_same_seeds(shape, kind):
    """Every nu of PyOD's list and every gamma setting: the same training scores, scores
    of new rows and draws from numpy's global random state."""
    from pyod.models.ocsvm import OCSVM

    n, d = shape
    rng = np.random.default_rng(n * 7 + d + len(kind))
    X = _rows(rng, n, d, kind)
    batches = (_rows(rng, 5, d, kind), X)
    for gamma, nus in (("auto", NU_RANGE), ("scale", (0.1, 0.9)), (0.3, (0.5,))):
        for nu in nus:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                np.random.seed(nu_seed := int(nu * 100))
                theirs = OCSVM(nu=nu, gamma=gamma).fit(X)
                after_theirs = np.random.rand()
                np.random.seed(nu_seed)
                ours = LeanOCSVM(nu=nu, gamma=gamma).fit(X)
                assert np.random.rand() == after_theirs
            assert ours.model_ is not None
            assert _same(ours.decision_scores_, theirs.decision_scores_)
            for batch in batches:
                assert _same(ours.decision_function(batch), theirs.decision_function(batch))
            assert _same(ours.decision_function(X.tolist()), theirs.decision_function(X))
            with pytest.raises(ValueError):
                ours.decision_function(batch[:, :-1] if d > 1 else np.hstack([batch, batch]))


def test_lean_ocsvm_falls_back_to_pyod():
    from pyod.models.ocsvm import OCSVM

    X = np.random.default_rng(2).normal(size=(20, 3))
    for settings in (
        {"kernel": "linear"},
        {"nu": 1.5},
        {"gamma": -1.0},
        {"tol": -1e-3},
        {"cache_size": 0},
        {"max_iter": -2},
        {"degree": -1},
        {"shrinking": 1},
    ):
        lean = LeanOCSVM(**settings)
        try:
            expected = OCSVM(**settings).fit(X).decision_scores_
        except Exception as error:  # the library's rejection, raised by the fallback too
            with pytest.raises(type(error)):
                lean.fit(X)
            continue
        assert _same(lean.fit(X).decision_scores_, expected)
        assert lean.model_ is None


@pytest.mark.parametrize(("shape", "kind"), CASES)
def test_lean_hbos_equals_pyods(shape, kind):
    """Every bin count of PyOD's list: the same histograms, training scores and scores of
    new rows (inside and outside the histograms' range)."""
    from pyod.models.hbos import HBOS

    n, d = shape
    rng = np.random.default_rng(n * 11 + d + len(kind))
    X = _rows(rng, n, d, kind)
    batches = (_rows(rng, 6, d, kind), X, 3 * rng.normal(size=(5, d)))
    for n_bins in (5, 10, 15, 20, 25, 30, 50):
        theirs, ours = HBOS(n_bins=n_bins).fit(X), LeanHBOS(n_bins=n_bins).fit(X)
        assert _same(ours.hist_, theirs.hist_) and _same(ours.bin_edges_, theirs.bin_edges_)
        assert _same(ours.decision_scores_, theirs.decision_scores_)
        assert ours.threshold_ == theirs.threshold_
        for batch in batches:
            assert _same(ours.decision_function(batch), theirs.decision_function(batch))
        assert _same(ours.decision_function(X.tolist()), theirs.decision_function(X))


def test_lean_hbos_falls_back_and_checks_areas_as_pyod():
    from pyod.models.hbos import HBOS

    X = np.random.default_rng(4).normal(size=(30, 3))
    for settings in ({"n_bins": "auto"}, {"n_bins": 2}):
        try:
            expected = HBOS(**settings).fit(X).decision_scores_
        except Exception as error:
            with pytest.raises(type(error)):
                LeanHBOS(**settings).fit(X)
            continue
        assert _same(LeanHBOS(**settings).fit(X).decision_scores_, expected)
    for total in (1.0, 0.9, 1.1, 0.89999, 1.1000001, 1.10001, 0.0, -1.0, np.inf, -np.inf, np.nan):
        for atol in (0.1, 0.0):
            assert isclose_to_one(float(total), atol) == bool(np.isclose(1, total, atol=atol))


def test_lean_members_replace_pyods_detectors_and_share_by_size():
    from pyod.models.hbos import HBOS
    from pyod.models.knn import KNN
    from pyod.models.lof import LOF
    from pyod.models.ocsvm import OCSVM

    members = lean_members(
        [
            KNN(n_neighbors=5),
            LOF(n_neighbors=5),
            KNN(n_neighbors=7, leaf_size=10),
            LOF(n_neighbors=7),
            OCSVM(nu=0.3),
            HBOS(),
        ]
    )
    assert [type(m) for m in members[:5]] == [LeanKNN, LeanLOF, LeanKNN, LeanLOF, LeanOCSVM]
    assert type(members[5]) is LeanHBOS
    assert members[0].neighbours is members[1].neighbours
    assert members[2].neighbours is not members[3].neighbours  # another leaf size
    assert members[2].leaf_size == 10 and members[4].nu == 0.3


@pytest.mark.parametrize(("n_rows", "n_features"), [(2, 2), (4, 3), (9, 5), (37, 4), (160, 6)])
@pytest.mark.parametrize("listed", [False, True])
@pytest.mark.parametrize("single_class", [False, True])
def test_lean_xgbod_equals_pyods(n_rows, n_features, listed, single_class):
    """PyOD's XGBOD (its default list, or a list given to it) and ours: the same augmented
    features, booster bytes, scores and labels, its training predictions read after its
    predictions of new rows; ties, duplicate rows and a single class (the script's fits
    before a straggler finishes) included."""
    from pyod.models.hbos import HBOS
    from pyod.models.knn import KNN
    from pyod.models.lof import LOF
    from pyod.models.ocsvm import OCSVM
    from pyod.models.xgbod import XGBOD

    def given():
        if not listed:
            return None
        return [
            KNN(n_neighbors=1),
            KNN(n_neighbors=2),
            LOF(n_neighbors=2),
            HBOS(n_bins=10),
            OCSVM(nu=0.1),
        ]

    rng = np.random.default_rng(n_rows)
    X = np.round(rng.normal(size=(n_rows, n_features)) * 3) / 3
    X[-1] = X[0]
    y = (rng.random(n_rows) < 0.3).astype(int)
    y[0] = 1
    if single_class:
        y[:] = 0
    test = np.vstack([np.round(rng.normal(size=(11, n_features)) * 3) / 3, X[:2]])
    if listed and n_rows <= 2:
        pytest.skip("the given list needs three rows")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.random.seed(4)
        theirs = XGBOD(estimator_list=given(), random_state=0, n_jobs=1).fit(X, y)
        np.random.seed(4)
        ours = LeanXGBOD(estimator_list=given(), random_state=0, n_jobs=1).fit(X, y)
        assert _same(ours.X_train_add_, theirs.X_train_add_)
        assert ours.clf_.get_booster().save_raw() == theirs.clf_.get_booster().save_raw()
        for batch in (test, test[:1], X):
            assert _same(ours.decision_function(batch), theirs.decision_function(batch))
            assert _same(ours.predict(batch), theirs.predict(batch))
        assert _same(ours.decision_scores_, theirs.decision_scores_)
        assert _same(ours.labels_, theirs.labels_)
        assert _same(ours.fit_predict(X, y), theirs.fit_predict(X, y))


def test_xgbod_defers_what_it_never_reads():
    """After LeanXGBOD's fit and predictions, neither its members' training thresholds nor
    its own training predictions have been computed; read, they are PyOD's."""
    from pyod.models.xgbod import XGBOD

    rng = np.random.default_rng(8)
    X = np.round(rng.normal(size=(60, 4)) * 3) / 3
    y = (rng.random(60) < 0.2).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.random.seed(1)
        ours = LeanXGBOD(random_state=0, n_jobs=1).fit(X, y)
        ours.predict(X[:7])
        assert "decision_scores_" not in vars(ours) and "labels_" not in vars(ours)
        for member in ours.estimator_list_:
            assert "decision_scores_" in vars(member)
            assert not {"threshold_", "labels_", "_mu", "_sigma"} & set(vars(member))
        np.random.seed(1)
        theirs = XGBOD(random_state=0, n_jobs=1).fit(X, y)
    for ind, (mine, pyods) in enumerate(zip(ours.estimator_list_, theirs.estimator_list_)):
        rows = ours._scalar.transform(X) if ours.standardization_flag_list_[ind] else X
        assert mine.threshold_ == pyods.threshold_
        assert _same(mine.labels_, pyods.labels_)
        assert mine._mu == pyods._mu and mine._sigma == pyods._sigma
        assert _same(mine.predict(rows[:9]), pyods.predict(rows[:9]))
    assert _same(ours.labels_, theirs.labels_)
    assert _same(ours.decision_scores_, theirs.decision_scores_)
    with pytest.raises(AttributeError):
        LeanXGBOD().decision_scores_  # noqa: B018 (unfitted: no training scores)


@pytest.mark.parametrize("defer", [False, True])
def test_deferred_threshold_equals_pyods(defer):
    """A lean member with its threshold deferred or not: PyOD's threshold, labels, mean and
    deviation when read, after a refit on other rows too; unfitted, none of them."""
    from pyod.models.knn import KNN

    rng = np.random.default_rng(5)
    member = LeanKNN(n_neighbors=3)
    member.neighbours = SharedNeighbours(3, dict(PYOD_SEARCH))
    member.defer_threshold = defer
    with pytest.raises(AttributeError):
        member.threshold_  # noqa: B018
    for X in (rng.normal(size=(20, 3)), np.round(rng.normal(size=(31, 2)))):
        member.fit(X)
        assert ("threshold_" in vars(member)) is not defer
        theirs = KNN(n_neighbors=3).fit(X)
        assert member.threshold_ == theirs.threshold_
        assert _same(member.labels_, theirs.labels_)
        assert (member._mu, member._sigma) == (theirs._mu, theirs._sigma)
        assert _same(member.predict(X[:5]), theirs.predict(X[:5]))
        assert _same(member.predict_proba(X[:5]), theirs.predict_proba(X[:5]))


@pytest.mark.parametrize("kind", KINDS)
def test_leading_neighbours_equal_narrower_tree_queries(kind):
    """Read off a wider query, a KD or ball tree's query is the one the tree gives for fewer
    neighbours, of the rows it was fitted on and of new rows; with ties, left to the tree."""
    from sklearn.neighbors import BallTree, KDTree

    rng = np.random.default_rng(len(kind))
    read_off = 0
    for n, d in ((3, 1), (12, 2), (80, 3), (200, 5)):
        X = _rows(rng, n, d, kind)
        for batch in (X, _rows(rng, 9, d, kind)):
            for tree in (KDTree(X, leaf_size=30), BallTree(X, leaf_size=4)):
                width = min(n, 52)
                widest = tree.query(batch, width, True)
                for k in range(1, width + 1):
                    answer = leading_neighbours(widest, k)
                    if answer is None:
                        continue
                    read_off += 1
                    expected = tree.query(batch, k, True)
                    assert _same(answer[0], expected[0]) and _same(answer[1], expected[1])
                    assert answer[0].flags.c_contiguous and answer[1].flags.c_contiguous
    if kind == "normal":
        assert read_off > 100  # no ties: every narrower query read off


def test_lean_neighbours_read_narrower_queries_off_the_widest():
    """PyOD's default sizes on rows without ties: one tree query of the training rows and
    one of each batch for all sizes, the same scores as PyOD's KNN and LOF."""
    from pyod.models.knn import KNN
    from pyod.models.lof import LOF
    from sklearn.neighbors import KDTree

    rng = np.random.default_rng(12)
    X, batch = rng.normal(size=(150, 4)), rng.normal(size=(17, 4))
    sizes = (1, 3, 5, 10, 20, 30, 40, 50)
    pyods = [d for k in sizes for d in (KNN(n_neighbors=k, method="largest"), LOF(n_neighbors=k))]
    members = lean_members(pyods)
    assert len({id(m.neighbours.widest) for m in members}) == 1
    assert members[0].neighbours.widest.widest_size == 50
    calls = []
    query = KDTree.query

    class CountingKDTree(KDTree):
        def query(self, *args, **kwargs):
            calls.append(args[1])
            return query(self, *args, **kwargs)

    import sklearn.neighbors._base as neighbours_base

    expected = [(d.fit(X).decision_scores_, d.decision_function(batch)) for d in pyods]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(neighbours_base, "KDTree", CountingKDTree)
        for ours, (scores, batch_scores) in zip(members, expected):
            ours.fit(X)
            assert _same(ours.decision_scores_, scores)
            assert _same(ours.decision_function(batch), batch_scores)
    assert calls == [51, 50]  # the widest query of the training rows and of the batch


def test_leading_neighbours_leave_a_tie_at_the_cut_to_the_tree():
    """A tie between the last neighbour kept and the first left out, or before it: the tree
    may keep another of the tied neighbours, so nothing is read off."""
    distances = np.array([[0.0, 1.0, 2.0, 2.0, 3.0], [0.0, 0.5, 1.0, 1.5, 2.5]])
    indices = np.array([[0, 1, 2, 3, 4], [1, 0, 2, 3, 4]])
    for n_columns in (1, 2):
        answer = leading_neighbours((distances, indices), n_columns)
        assert answer is not None and _same(answer[1], indices[:, :n_columns])
    for n_columns in (3, 4, 5):  # a tie at the cut (3), before it (4), no wider query (5)
        assert leading_neighbours((distances, indices), n_columns) is None
    assert leading_neighbours((distances[:, [0, 0, 1]], indices[:, :3]), 1) is None


def _search_state(search) -> dict:
    """A fitted NearestNeighbors' attributes, its tree's arrays as bytes."""
    state = {}
    for name, value in vars(search).items():
        if name == "_tree" and value is not None:
            state[name] = (type(value), [np.asarray(a).tobytes() for a in value.get_arrays()])
        elif isinstance(value, np.ndarray):
            state[name] = (value.dtype.str, value.shape, value.tobytes())
        else:
            state[name] = value
    return state


@pytest.mark.parametrize("algorithm", ["auto", "kd_tree", "ball_tree", "brute"])
def test_fitted_search_equals_a_fresh_fit(algorithm):
    """Every size's search is the one NearestNeighbors fits itself (its attributes, tree and
    answers), the sizes on one side of the brute-force bound sharing one tree; sizes
    scikit-learn rejects get its own error."""
    from sklearn.neighbors import NearestNeighbors

    settings = {**PYOD_SEARCH, "algorithm": algorithm}
    rng = np.random.default_rng(17)
    for (n, d), kind in CASES:
        X = _rows(rng, n, d, kind)
        batch = np.vstack([_rows(rng, 5, d, kind), X])
        queries = WidestQueries()
        trees = {}
        for k in [*[k for k in K_RANGE if k <= n], n // 2, max(1, n // 2 - 1)]:
            ours = queries.fitted_search(X, rows_key(X), k, settings)
            fresh = NearestNeighbors(n_neighbors=k, radius=1.0, **settings).fit(X)
            assert _search_state(ours) == _search_state(fresh), (n, d, kind, k)
            assert all(
                _same(a, b) for a, b in zip(ours.kneighbors(batch, k), fresh.kneighbors(batch, k))
            )
            trees.setdefault(ours._fit_method, set()).add(id(ours._tree))
        assert all(len(shared) == 1 for shared in trees.values())
        for k in (0, -1, 2.5, None, True):
            fresh = _answer_or_error(NearestNeighbors(n_neighbors=k, radius=1.0, **settings), X)
            ours = _answer_or_error(queries, X, k, settings)
            if isinstance(fresh, type):
                assert ours is fresh, k
            else:
                assert all(_same(a, b) for a, b in zip(ours, fresh)), k


def _answer_or_error(search, X, *shared):
    """`search.fit(X).kneighbors(X)`, or `search.fitted_search(X, ..., *shared)`'s, or the
    type of the error raised."""
    try:
        if shared:
            return search.fitted_search(X, rows_key(X), *shared).kneighbors(X)
        return search.fit(X).kneighbors(X)
    except (ValueError, TypeError) as error:
        return type(error)
