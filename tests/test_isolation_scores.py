"""The sequential isolation-forest scoring (stragglers/methods/_isolation_scores.py) gives
scikit-learn's and PyOD's scores bit for bit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.ensemble import IsolationForest
from sklearn.ensemble._bagging import BaseBagging
from sklearn.ensemble._iforest import _average_path_length

from stragglers.methods._isolation_scores import (
    FastIForest,
    SequentialIsolationForest,
    _all_or_drawn,
    _draw_indices,
    average_path_lengths,
)


def _rows(seed: int, n: int, rounded: bool) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, 6))
    return np.round(rows) if rounded else rows


@pytest.mark.parametrize(
    ("n", "settings"),
    [
        (1, {}),  # one training row: depths and denominator 0, every score 1
        (8, {}),
        (60, {"max_features": 0.5}),  # subsampled features
        (300, {"max_samples": 64, "bootstrap": True}),
    ],
)
def test_sequential_scores_equal_scikit_learns(n, settings):
    for rounded in (False, True):
        train, test = _rows(n, n, rounded), _rows(n + 1, 37, rounded)
        theirs = IsolationForest(n_estimators=30, random_state=4, **settings).fit(train)
        ours = SequentialIsolationForest(n_estimators=30, random_state=4, **settings).fit(train)
        for rows in (train, test):
            assert ours.score_samples(rows).tobytes() == theirs.score_samples(rows).tobytes()
            assert (
                ours.decision_function(rows).tobytes() == theirs.decision_function(rows).tobytes()
            )
        assert ours.offset_ == theirs.offset_


def test_fast_iforest_equals_pyods():
    """Same training scores, threshold and test scores as PyOD's IForest, and PyOD's
    IsolationForest name restored afterwards."""
    import pyod.models.iforest as pyod_iforest

    train, test = _rows(1, 120, True), _rows(2, 40, False)
    theirs = pyod_iforest.IForest(random_state=9, n_jobs=1).fit(train)
    ours = FastIForest(random_state=9, n_jobs=1).fit(train)
    assert isinstance(ours.detector_, SequentialIsolationForest)
    assert ours.decision_scores_.tobytes() == theirs.decision_scores_.tobytes()
    assert ours.threshold_ == theirs.threshold_
    assert ours.decision_function(test).tobytes() == theirs.decision_function(test).tobytes()
    assert pyod_iforest.IsolationForest is IsolationForest


def _comparable(params: dict) -> dict:
    """Estimator parameters, a RandomState object as its state (the forests' own objects
    differ, their states must not)."""
    return {
        name: repr(value.get_state(legacy=False))
        if isinstance(value, np.random.RandomState)
        else value
        for name, value in params.items()
    }


def _assert_same_forest(ours: IsolationForest, theirs: IsolationForest, rows: np.ndarray):
    """The same fitted forest: every tree's parameters, attributes and arrays, the drawn
    seeds, features and rows, the path lengths, the offset and the scores."""
    # ours adds each node's term of the depths (checked below)
    assert sorted(vars(ours)) == sorted([*vars(theirs), "_node_path_lengths"])
    assert ours.max_samples_ == theirs.max_samples_
    assert ours._max_samples == theirs._max_samples
    assert ours._max_features == theirs._max_features
    assert ours.n_features_in_ == theirs.n_features_in_
    assert _comparable(ours.estimator_.get_params()) == _comparable(theirs.estimator_.get_params())
    assert np.array_equal(ours._seeds, theirs._seeds)
    assert len(ours.estimators_) == len(theirs.estimators_)
    for tree, their_tree in zip(ours.estimators_, theirs.estimators_, strict=True):
        assert type(tree) is type(their_tree)
        assert tree.get_params() == their_tree.get_params()
        assert type(tree.random_state) is type(their_tree.random_state)
        attributes = {name: value for name, value in vars(tree).items() if name != "tree_"}
        their_attributes = {n: v for n, v in vars(their_tree).items() if n != "tree_"}
        assert attributes == their_attributes
        state, their_state = tree.tree_.__getstate__(), their_tree.tree_.__getstate__()
        assert sorted(state) == sorted(their_state)
        for name, value in state.items():
            assert np.asarray(value).tobytes() == np.asarray(their_state[name]).tobytes(), name
        assert tree.tree_.n_features == their_tree.tree_.n_features
    for features, their_features in zip(
        ours.estimators_features_, theirs.estimators_features_, strict=True
    ):
        assert features.tobytes() == their_features.tobytes()
    for samples, their_samples in zip(
        ours.estimators_samples_, theirs.estimators_samples_, strict=True
    ):
        assert samples.tobytes() == their_samples.tobytes()
    for name in ("_average_path_length_per_tree", "_decision_path_lengths"):
        for ours_lengths, their_lengths in zip(
            getattr(ours, name), getattr(theirs, name), strict=True
        ):
            assert ours_lengths.dtype == their_lengths.dtype
            assert ours_lengths.tobytes() == their_lengths.tobytes()
    for node_lengths, lengths, depths in zip(
        ours._node_path_lengths,
        theirs._average_path_length_per_tree,
        theirs._decision_path_lengths,
        strict=True,
    ):
        assert node_lengths.tobytes() == (depths + lengths - 1.0).tobytes()
    assert ours.offset_ == theirs.offset_
    assert ours.decision_function(rows).tobytes() == theirs.decision_function(rows).tobytes()


LIBRARY_BAGGING_FIT = BaseBagging._fit


@pytest.fixture
def no_library_bagging(monkeypatch):
    """scikit-learn's bagging loop out of reach: the fast fit must not fall back on it."""

    def refuse(*args, **kwargs):
        raise AssertionError("scikit-learn's BaseBagging._fit was called")

    monkeypatch.setattr(BaseBagging, "_fit", refuse)


def _training_rows(kind: str, n: int, n_features: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(n, n_features))
    if kind == "rounded":  # many ties
        rows = np.round(rows)
    elif kind == "constant_column":
        rows[:, 0] = 3.0
    elif kind == "duplicates":  # every row twice, and one repeated many times
        rows = np.concatenate([rows, rows])[:n]
        rows[: max(1, n // 3)] = rows[0]
    elif kind == "all_constant":
        rows[:] = 1.5
    elif kind == "nan":  # the forest accepts NaN (its trees get no missing-value mask)
        rows[rng.random(rows.shape) < 0.1] = np.nan
    elif kind == "wide_range":
        rows = rows * 10.0 ** rng.integers(-8, 9, size=(1, n_features))
    return rows


FIT_CASES = [
    # (n, n_features, settings, kind)
    (1, 3, {}, "normal"),
    (2, 1, {}, "normal"),
    (3, 2, {"contamination": 0.3}, "normal"),
    (17, 4, {}, "rounded"),
    (40, 6, {"max_samples": 10}, "constant_column"),
    (40, 6, {"max_samples": 1}, "normal"),
    (50, 3, {"max_samples": 500}, "normal"),  # more than n: all rows, with a warning
    (60, 5, {"max_samples": 0.3, "contamination": 0.05}, "duplicates"),
    (80, 5, {"max_samples": 1.0}, "all_constant"),
    (90, 4, {"max_features": 0.5}, "normal"),
    (90, 4, {"max_features": 2, "contamination": 0.5}, "rounded"),
    (120, 3, {"bootstrap": True}, "duplicates"),
    (120, 3, {"bootstrap": True, "max_samples": 0.5, "max_features": 0.7}, "nan"),
    (255, 2, {}, "normal"),
    (256, 2, {"contamination": 0.1}, "wide_range"),
    (257, 7, {}, "constant_column"),
    (700, 3, {"contamination": 0.2}, "normal"),
    (700, 8, {"max_samples": 300, "max_features": 0.25}, "rounded"),
]


@pytest.mark.parametrize(("n", "n_features", "settings", "kind"), FIT_CASES)
@pytest.mark.parametrize("random_state", [0, 7, 2**31 - 2])
def test_fit_grows_scikit_learns_forest(
    n, n_features, settings, kind, random_state, no_library_bagging
):
    """The same seeds, features, rows, tree random states and trees as
    IsolationForest.fit, without its bagging loop."""
    train = _training_rows(kind, n, n_features, random_state % 1000 + n)
    test = np.concatenate([train[:5], _training_rows("normal", 20, n_features, n + 1)])
    forest_settings = {"n_estimators": 25, "random_state": random_state, **settings}
    with warnings.catch_warnings(record=True) as our_warnings:
        warnings.simplefilter("always")
        ours = SequentialIsolationForest(**forest_settings).fit(train)
    with warnings.catch_warnings(record=True) as their_warnings:
        warnings.simplefilter("always")
        theirs = _library_forest(forest_settings, train)
    assert [str(w.message) for w in our_warnings] == [str(w.message) for w in their_warnings]
    _assert_same_forest(ours, theirs, test)


def _library_forest(
    settings: dict, train: np.ndarray, forest: IsolationForest | None = None
) -> IsolationForest:
    """scikit-learn's IsolationForest (`forest`, or a new one of `settings`) fitted on
    `train` with its own bagging loop, also where a test has put it out of reach."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BaseBagging, "_fit", LIBRARY_BAGGING_FIT)
        return (IsolationForest(**settings) if forest is None else forest).fit(train)


@pytest.mark.parametrize("make_state", ["random_state_object", "global_state"])
def test_fit_with_a_random_state_object_or_none(make_state, no_library_bagging):
    """A RandomState object (drawn from for the targets, then for the seeds) and None
    (numpy's global state) advance as in scikit-learn's fit."""
    train, test = _training_rows("normal", 150, 3, 5), _training_rows("normal", 30, 3, 6)

    def state():
        if make_state == "random_state_object":
            return np.random.RandomState(11)
        np.random.seed(11)
        return None

    ours = SequentialIsolationForest(n_estimators=20, random_state=state()).fit(train)
    theirs = _library_forest({"n_estimators": 20, "random_state": state()}, train)
    _assert_same_forest(ours, theirs, test)


def test_warm_start_grows_scikit_learns_forest(no_library_bagging):
    """Growing 10 trees to 30 skips the first seeds as scikit-learn's warm start does."""
    train, test = _training_rows("rounded", 200, 4, 1), _training_rows("normal", 30, 4, 2)
    ours = SequentialIsolationForest(n_estimators=10, warm_start=True, random_state=3)
    theirs = IsolationForest(n_estimators=10, warm_start=True, random_state=3)
    ours.fit(train)
    _library_forest({}, train, theirs)
    first_trees = list(ours.estimators_)
    ours.set_params(n_estimators=30).fit(train)
    _library_forest({}, train, theirs.set_params(n_estimators=30))
    assert ours.estimators_[:10] == first_trees  # the same objects kept
    _assert_same_forest(ours, theirs, test)


def test_fit_falls_back_on_scikit_learn():
    """Sample weights, sparse rows and a warm start adding no tree take scikit-learn's path."""
    from scipy.sparse import csc_matrix, csr_matrix

    train = _training_rows("rounded", 100, 3, 4)
    weights = np.random.default_rng(0).random(100)
    ours = SequentialIsolationForest(n_estimators=15, random_state=1)
    theirs = IsolationForest(n_estimators=15, random_state=1)
    ours.fit(train, sample_weight=weights)
    theirs.fit(train, sample_weight=weights)
    _assert_same_forest(ours, theirs, train)
    ours = SequentialIsolationForest(n_estimators=15, random_state=1).fit(csc_matrix(train))
    theirs = IsolationForest(n_estimators=15, random_state=1).fit(csc_matrix(train))
    _assert_same_forest(ours, theirs, train)
    _assert_same_forest(ours, theirs, csr_matrix(train))  # sparse rows scored
    ours = SequentialIsolationForest(n_estimators=15, random_state=1, warm_start=True).fit(train)
    with pytest.warns(UserWarning, match="without increasing n_estimators"):
        ours.fit(train)


def test_a_perturbed_seed_is_caught(monkeypatch):
    """The comparison fails when a single tree grows from another seed."""
    train = _training_rows("normal", 120, 3, 8)
    theirs = IsolationForest(n_estimators=12, random_state=2).fit(train)
    grow_tree = SequentialIsolationForest._grow_tree

    def grow_one_from_another_seed(self, X, targets, seed, *args):
        if seed == self._seeds[5]:
            seed = seed + 1
        return grow_tree(self, X, targets, seed, *args)

    monkeypatch.setattr(SequentialIsolationForest, "_grow_tree", grow_one_from_another_seed)
    ours = SequentialIsolationForest(n_estimators=12, random_state=2).fit(train)
    with pytest.raises(AssertionError):
        _assert_same_forest(ours, theirs, train)


@pytest.mark.parametrize(
    "sizes",
    [[1], [0, 1, 2, 3], [256, 128, 2, 1, 1, 5], list(range(300)), [2**40]],
)
def test_average_path_lengths_equal_scikit_learns(sizes):
    leaf_sizes = np.asarray(sizes, dtype=np.intp)
    theirs = _average_path_length(leaf_sizes)
    ours = average_path_lengths(leaf_sizes)
    assert ours.dtype == theirs.dtype
    assert ours.shape == theirs.shape
    assert ours.tobytes() == theirs.tobytes()


@pytest.mark.filterwarnings("ignore:max_samples")
@pytest.mark.parametrize(("n", "n_features", "settings", "kind"), FIT_CASES)
def test_fit_decision_function_equals_fit_then_decision_function(n, n_features, settings, kind):
    """The training rows scored once give decision_function's values on them."""
    from scipy.sparse import csc_matrix

    train = _training_rows(kind, n, n_features, n)
    for rows in (train, csc_matrix(train)):
        ours = SequentialIsolationForest(n_estimators=20, random_state=5, **settings)
        decisions = ours.fit_decision_function(rows)
        theirs = IsolationForest(n_estimators=20, random_state=5, **settings).fit(rows)
        assert decisions.tobytes() == theirs.decision_function(rows).tobytes()
        _assert_same_forest(ours, theirs, train)


@pytest.mark.parametrize("n", [1, 6, 120, 400])
@pytest.mark.parametrize("contamination", [0.05, 0.1, 0.3])
def test_fast_iforest_equals_pyods_across_sizes(n, contamination):
    """PyOD's IForest and ours: the same training scores, threshold, labels and test scores."""
    import pyod.models.iforest as pyod_iforest

    train, test = _rows(n, n, True), _rows(n + 3, 25, False)
    settings = {"contamination": contamination, "n_estimators": 40, "random_state": n}
    theirs = pyod_iforest.IForest(**settings).fit(train)
    ours = FastIForest(**settings).fit(train)
    assert ours.decision_scores_.tobytes() == theirs.decision_scores_.tobytes()
    assert ours.threshold_ == theirs.threshold_
    assert ours.labels_.tobytes() == theirs.labels_.tobytes()
    assert ours.decision_function(test).tobytes() == theirs.decision_function(test).tobytes()
    assert np.array_equal(ours.predict(test), theirs.predict(test))


def test_fast_iforest_decision_function_validates_as_pyods():
    """Rows of every kind PyOD accepts score alike; rows it or scikit-learn refuses raise
    the same error."""
    from pyod.models.iforest import IForest
    from scipy.sparse import csr_matrix

    train = _rows(4, 80, True)
    theirs = IForest(n_estimators=30, random_state=2).fit(train)
    ours = FastIForest(n_estimators=30, random_state=2).fit(train)
    rows = _rows(5, 30, False) * 1e3
    accepted = [
        rows,
        np.asfortranarray(rows),
        rows.astype(np.float32),
        np.round(rows).astype(np.int64),
        rows[::2],  # not contiguous
        rows[:1],
        rows.tolist(),
        np.full((3, 6), 1e300),  # beyond float32: infinite after the conversion
    ]
    for X in accepted:
        assert ours.decision_function(X).tobytes() == theirs.decision_function(X).tobytes()
        assert np.array_equal(ours.predict(X), theirs.predict(X))
    with_nan = rows.copy()
    with_nan[3, 2] = np.nan
    for X in (with_nan, rows[:, :4], csr_matrix(rows), rows[0]):
        with pytest.raises((ValueError, TypeError)) as their_error:
            theirs.decision_function(X)
        with pytest.raises(their_error.type) as our_error:
            ours.decision_function(X)
        # the forest's class is named in the feature-count message
        our_message = str(our_error.value).replace("SequentialIsolationForest", "IsolationForest")
        assert our_message == str(their_error.value)


def test_per_tree_path_lengths_equal_each_trees_own():
    """All trees' node sizes and depths in one call: each tree's values those of scikit-learn's
    `_average_path_length` of its sizes, and of its own `depths + lengths - 1.0` (one node,
    sizes 0 to 2, repeated sizes, trees of every length up to a real forest's)."""
    from stragglers.methods._isolation_scores import (
        per_tree_average_path_lengths,
        per_tree_node_path_lengths,
    )

    rng = np.random.default_rng(61)
    assert per_tree_average_path_lengths([]) == []
    assert per_tree_node_path_lengths((), ()) == ()
    for trial in range(120):
        n_trees = int(rng.integers(1, 110))
        largest = 3 if trial % 4 == 0 else 300
        sizes = [
            rng.integers(0, largest, size=int(rng.integers(1, 520))).astype(np.intp)
            for _ in range(n_trees)
        ]
        depths = [rng.integers(0, 9, size=len(size)).astype(np.int64) for size in sizes]
        lengths = per_tree_average_path_lengths(sizes)
        assert len(lengths) == n_trees
        for ours, size in zip(lengths, sizes, strict=True):
            theirs = _average_path_length(size)
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
            assert ours.tobytes() == theirs.tobytes()
        nodes = per_tree_node_path_lengths(tuple(lengths), tuple(depths))
        for ours, length, depth in zip(nodes, lengths, depths, strict=True):
            assert ours.tobytes() == (depth + length - 1.0).tobytes()


def test_all_of_a_population_is_drawn_as_bagging_draws_it():
    """`_all_or_drawn` gives bagging's `_draw_indices` (scikit-learn's sampling) for every
    population and size, with and without replacement, the stream left where it leaves it."""
    for population in (1, 2, 3, 13, 99, 100, 101, 256, 300):
        for size in sorted({1, population // 2 or 1, population - 1 or 1, population}):
            for bootstrap in (False, True):
                ours, theirs = np.random.RandomState(5), np.random.RandomState(5)
                drawn = _all_or_drawn(ours, bootstrap, population, size)
                expected = _draw_indices(theirs, bootstrap, population, size)
                assert drawn.dtype == expected.dtype and drawn.tobytes() == expected.tobytes()
                assert ours.randint(2**31 - 1) == theirs.randint(2**31 - 1)
