"""NURD's latency regressors fitted with less Python around them, against the library calls
they replace, model for model: BoostedLatencyModel's rounds against `xgboost.train` (the
saved model's bytes and the predictions), `DirectTreeGradientBoostingRegressor` against
`GradientBoostingRegressor` (every tree's nodes, the training scores and the predictions),
and the compiled sort its trees use against scikit-learn's.
"""

from __future__ import annotations

import numpy as np
import pytest

from stragglers.methods._gradient_boosting import DirectTreeGradientBoostingRegressor
from stragglers.methods.nurd import BoostedLatencyModel


def regression_inputs():
    """(features, latency) pairs: random, tied and constant columns, duplicated rows, one and
    two rows, NaN features (both libraries take them as missing), latencies all equal, a real
    job's checkpoint."""
    rng = np.random.default_rng(7)
    cases = []
    for n, d in ((1, 3), (2, 1), (3, 4), (17, 5), (60, 12), (250, 8)):
        cases.append((rng.random((n, d)), rng.lognormal(7, 1, n)))
    tied = np.round(rng.random((80, 6)) * 3) / 3
    tied[:, 2] = 1.0  # a constant column
    cases.append((tied, np.round(rng.random(80) * 4)))
    # as real task usage: mostly distinct values, a few tied ones, a coarse column, columns
    # within FEATURE_THRESHOLD of constant
    usage = np.round(rng.random((330, 7)), 3)
    usage[:, 4] = np.round(usage[:, 4] * 12)
    usage[:, 5] = 0.5 + rng.random(330) * 1e-8
    usage[rng.random(330) < 0.3, 6] = 0.0
    cases.append((usage, rng.lognormal(6, 1.5, 330)))
    # tied columns twice over: equal splits whose proxies differ only by the rounding of
    # sums taken in the two sorts' orders
    twins = np.round(rng.random((200, 3)), 2)
    cases.append((np.c_[twins, twins, twins[:, ::-1]], rng.lognormal(0, 3, 200)))
    duplicated = np.repeat(rng.random((10, 4)), 5, axis=0)
    cases.append((duplicated, np.repeat(rng.random(10), 5)))
    cases.append((rng.random((40, 3)), np.full(40, 5.0)))
    missing = rng.random((70, 5))
    missing[rng.random(missing.shape) < 0.2] = np.nan
    cases.append((missing, rng.random(70)))
    # as a real job's checkpoint: tie-free columns, columns with a few tied pairs, coarse
    # columns, a column of a few values, latencies of a few dozen values (every tree's root
    # starts its sorts from each of several tie-free columns and from none)
    checkpoint = rng.random((320, 11))
    for column in range(3, 8):
        pairs = rng.choice(320, size=(column - 2, 2), replace=False)
        checkpoint[pairs[:, 1], column] = checkpoint[pairs[:, 0], column]
    checkpoint[:, 8:10] = np.round(checkpoint[:, 8:10] * 100)
    checkpoint[:, 10] = np.round(checkpoint[:, 10] * 6)
    cases.append((checkpoint, np.round(rng.lognormal(3, 1, 320))))
    return cases


@pytest.mark.parametrize("case", range(len(regression_inputs())))
@pytest.mark.parametrize(
    "rounds, depth, rate, max_bin, seed", [(100, 3, 0.1, 64, 11), (7, 5, 0.3, 16, 0)]
)
def test_boosted_latency_model_equals_xgboost_train(case, rounds, depth, rate, max_bin, seed):
    import xgboost

    features, latency = regression_inputs()[case]
    model = BoostedLatencyModel(rounds, depth, rate, max_bin, seed).fit(features, latency)
    data = xgboost.DMatrix(features, label=latency, nthread=1)
    trained = xgboost.train(model.params, data, num_boost_round=rounds)
    assert bytes(model.booster.save_raw("json")) == bytes(trained.save_raw("json"))
    rng = np.random.default_rng(case)
    for block in (features, rng.random((9, features.shape[1])), features[:0]):
        a, b = model.predict(block), trained.inplace_predict(block)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def tree_arrays(regressor) -> list[np.ndarray]:
    arrays = []
    for (tree,) in regressor.estimators_:
        t = tree.tree_
        arrays += [t.feature, t.threshold, t.value, t.children_left, t.children_right]
        arrays += [t.n_node_samples, t.weighted_n_node_samples, t.impurity]
        # scikit-learn's builder leaves a leaf's missing_go_to_left unset
        arrays += [np.where(t.children_left == -1, 0, t.missing_go_to_left), np.array(t.max_depth)]
    return arrays


def test_direct_tree_boosting_still_checks_parameters():
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.utils._param_validation import InvalidParameterError

    features, latency = regression_inputs()[4]
    for bad in ({"n_estimators": 0}, {"learning_rate": -1.0}, {"max_depth": "3"}):
        with pytest.raises(InvalidParameterError):
            GradientBoostingRegressor(**bad).fit(features, latency)
        with pytest.raises(InvalidParameterError):
            DirectTreeGradientBoostingRegressor(**bad).fit(features, latency)
    import sklearn

    assert sklearn.get_config()["skip_parameter_validation"] is False  # restored


def assert_same_boosting(ours, theirs, features, seed):
    for a, b in zip(tree_arrays(ours), tree_arrays(theirs), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ours.train_score_, theirs.train_score_)
    np.testing.assert_array_equal(ours.init_.constant_, theirs.init_.constant_)
    rng = np.random.default_rng(seed)
    for block in (features, rng.random((9, features.shape[1]))):
        np.testing.assert_array_equal(ours.predict(block), theirs.predict(block))


DIRECT_PARAMS = [
    {"random_state": 42},
    {"n_estimators": 13, "max_depth": 5, "learning_rate": 0.3, "random_state": 3},
    {"n_estimators": 20, "max_depth": None, "random_state": 0},
    {"n_estimators": 15, "min_samples_leaf": 3, "min_samples_split": 4, "random_state": 5},
    {"n_estimators": 15, "min_samples_split": 7, "min_impurity_decrease": 0.01, "random_state": 6},
    {"n_estimators": 10, "min_weight_fraction_leaf": 0.1, "random_state": 8},
]


@pytest.mark.parametrize("case", range(len(regression_inputs())))
@pytest.mark.parametrize("params", DIRECT_PARAMS)
def test_direct_tree_boosting_equals_scikit_learn(case, params, monkeypatch):
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.tree import DecisionTreeRegressor

    features, latency = regression_inputs()[case]
    if np.isnan(features).any():  # refused alike (the replay fills NaN before)
        with pytest.raises(ValueError, match="NaN"):
            DirectTreeGradientBoostingRegressor(**params).fit(features, latency)
        return
    theirs = GradientBoostingRegressor(**params).fit(features, latency)

    def refuse(*args, **kwargs):
        raise AssertionError("the stage went through DecisionTreeRegressor.fit")

    # the stages these settings cover never reach the estimator's own fit
    monkeypatch.setattr(DecisionTreeRegressor, "fit", refuse)
    ours = DirectTreeGradientBoostingRegressor(**params).fit(features, latency)
    assert_same_boosting(ours, theirs, features, case)


@pytest.mark.parametrize(
    "params, weighted",
    [
        ({"n_estimators": 12, "loss": "absolute_error", "random_state": 1}, False),
        ({"n_estimators": 12, "loss": "huber", "random_state": 1}, False),
        ({"n_estimators": 12, "subsample": 0.6, "random_state": 2}, False),
        ({"n_estimators": 12, "max_features": "sqrt", "random_state": 3}, False),
        ({"n_estimators": 12, "max_leaf_nodes": 5, "random_state": 4}, False),
        ({"n_estimators": 12, "min_samples_leaf": 0.1, "random_state": 5}, False),
        ({"n_estimators": 12, "ccp_alpha": 0.01, "random_state": 6}, False),
        ({"n_estimators": 12, "random_state": 7}, True),
        ({"n_estimators": 12, "n_iter_no_change": 3, "random_state": 8}, False),
    ],
)
def test_direct_tree_boosting_leaves_other_stages_to_scikit_learn(params, weighted):
    from scipy.sparse import csr_matrix
    from sklearn.ensemble import GradientBoostingRegressor

    features, latency = regression_inputs()[4]
    weights = np.linspace(0.5, 2.0, len(latency)) if weighted else None
    for rows in (features, csr_matrix(features)):
        theirs = GradientBoostingRegressor(**params).fit(rows, latency, sample_weight=weights)
        ours = DirectTreeGradientBoostingRegressor(**params).fit(
            rows, latency, sample_weight=weights
        )
        assert_same_boosting(ours, theirs, features, 0)


def test_direct_tree_boosting_warm_start_adds_the_same_trees():
    from sklearn.ensemble import GradientBoostingRegressor

    features, latency = regression_inputs()[4]
    models = []
    for klass in (GradientBoostingRegressor, DirectTreeGradientBoostingRegressor):
        model = klass(n_estimators=10, warm_start=True, random_state=9).fit(features, latency)
        model.set_params(n_estimators=25)
        models.append(model.fit(features, latency))
    assert_same_boosting(models[1], models[0], features, 1)


@pytest.mark.parametrize("case", [4, 6, 9])
@pytest.mark.parametrize("weights", ["ragged", "some zero"])
def test_direct_tree_boosting_equals_scikit_learn_with_weights(case, weights, monkeypatch):
    """Weights other than 1 take every search exactly (no bound on the rounding), zero
    weights leave rows out of the trees but not out of the raw predictions."""
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.tree import DecisionTreeRegressor

    features, latency = regression_inputs()[case]
    rng = np.random.default_rng(case)
    weight = rng.uniform(0.5, 2.0, len(latency))
    if weights == "some zero":
        weight = np.where(rng.random(len(latency)) < 0.2, 0.0, 1.0)
    params = {"n_estimators": 30, "random_state": case}
    theirs = GradientBoostingRegressor(**params).fit(features, latency, sample_weight=weight)
    monkeypatch.setattr(DecisionTreeRegressor, "fit", None)
    ours = DirectTreeGradientBoostingRegressor(**params).fit(
        features, latency, sample_weight=weight
    )
    assert_same_boosting(ours, theirs, features, case)


def sort_inputs():
    rng = np.random.default_rng(3)
    inputs = [np.zeros(0), np.ones(1), np.arange(16.0), np.arange(16.0)[::-1]]
    for n in (2, 15, 16, 17, 40, 327, 1000):
        inputs.append(rng.random(n))
        inputs.append(np.round(rng.random(n) * 5))  # a few distinct values
        inputs.append(np.full(n, 2.5))
        inputs.append(np.sort(np.round(rng.random(n), 2)))
        inputs.append(np.sort(np.round(rng.random(n), 2))[::-1])
        inputs.append(np.r_[np.arange(n // 2), np.arange(n - n // 2)[::-1]])  # organ pipe
        inputs.append(np.where(rng.random(n) < 0.5, 0.0, -0.0))  # zeros of both signs
    return [x.astype(np.float32) for x in inputs]


@pytest.mark.parametrize("case", range(len(sort_inputs())))
def test_simultaneous_sort_equals_scikit_learn(case):
    from sklearn.utils._sorting import _py_simultaneous_sort

    from stragglers.methods._boosting_kernel import simultaneous_sort

    values = sort_inputs()[case]
    n = len(values)
    rng = np.random.default_rng(case)
    for samples in (np.arange(n), rng.permutation(n)):
        theirs_values, theirs_samples = values.copy(), samples.astype(np.intp)
        if n:
            _py_simultaneous_sort(theirs_values, theirs_samples, n, use_three_way_partition=True)
        # a slice of longer arrays, as a node's rows sit in the splitter's
        ours_values = np.r_[np.float32(9), values, np.float32(-9)]
        ours_samples = np.r_[-1, samples, -1].astype(np.int64)
        segments = np.empty((n // 2 + 2, 3), dtype=np.int64)
        simultaneous_sort(ours_values, ours_samples, 1, n, segments)
        np.testing.assert_array_equal(ours_samples[1 : n + 1], theirs_samples)
        assert ours_values[1 : n + 1].tobytes() == theirs_values.tobytes()
        assert (ours_samples[0], ours_samples[-1]) == (-1, -1)


def tied_sort_inputs():
    """sort_inputs and columns as real task usage has them: distinct values but a pair or a
    few tied, long runs of one value among distinct ones, ties of both zeros."""
    rng = np.random.default_rng(5)
    inputs = list(sort_inputs())
    for n in (16, 31, 80, 327, 700):
        distinct = rng.permutation(n).astype(np.float32)
        for n_tied in (1, 3, n // 10):
            column = distinct.copy()
            pairs = rng.choice(n, size=(n_tied, 2), replace=False)
            column[pairs[:, 1]] = column[pairs[:, 0]]
            inputs.append(column)
        runs = distinct.copy()
        runs[rng.random(n) < 0.6] = 0.0
        inputs.append(runs)
        zeros = distinct.copy()
        zeros[rng.random(n) < 0.1] = -0.0
        zeros[rng.random(n) < 0.1] = 0.0
        inputs.append(zeros)
    return inputs


@pytest.mark.parametrize("case", range(len(tied_sort_inputs())))
def test_replayed_tied_sort_equals_the_full_sort(case):
    """The sort of the values' ranks run on the tied segments only, with every other row put
    in its sorted position, leaves the rows as the library's whole sort does, whatever sorted
    order of the rows it starts from and wherever the node's rows sit."""
    from stragglers.methods._boosting_kernel import (
        _replay_tied_sort,
        simultaneous_sort,
        value_ranks,
    )

    column = tied_sort_inputs()[case]
    n = len(column)
    if n == 0:
        return
    rng = np.random.default_rng(case)
    # the node's rows among others: rows of the other features, positions 2..n+2
    X = np.c_[rng.random(n + 3), np.r_[column, np.float32([7, 8, 9])]].astype(np.float32)
    rows = np.arange(n + 3)
    ranks = value_ranks(X, rows, np.array([np.argsort(x, kind="stable") for x in X.T]))
    start, end = 2, n + 2
    stable = np.argsort(column, kind="stable")
    ties_reversed = np.lexsort((-np.arange(n), column))
    for received in (np.arange(n), rng.permutation(n), rng.permutation(n), stable[::-1]):
        full_samples = received.astype(np.int64)
        full_values = column[received]
        segments = np.empty((n // 2 + 2, 3), dtype=np.int64)
        simultaneous_sort(full_values, full_samples, 0, n, segments)
        for sorted_rows in (stable, ties_reversed):
            order = np.r_[[n + 1, n + 2], sorted_rows, [n]].astype(np.int64)
            samples = np.r_[[n + 1, n + 2], received, [n]].astype(np.int64)
            scratch = np.zeros(n + 3, dtype=np.int64), np.zeros(n + 3, dtype=np.int64)
            no_root_orders = np.empty((1, 1, 0), dtype=np.int64), np.zeros((1, 1), dtype=bool)
            space = (segments, *scratch, ranks, *no_root_orders)
            _replay_tied_sort(1, order, samples, start, end, space)
            np.testing.assert_array_equal(samples[start:end], full_samples)
            assert samples[:start].tolist() == [n + 1, n + 2] and samples[end] == n


def test_value_ranks_order_as_the_values():
    """Ranks compare as the values do: equal values (zeros of both signs among them) share a
    rank, a higher value has a higher rank; rows outside `rows` are left out."""
    from stragglers.methods._boosting_kernel import value_ranks

    for column in tied_sort_inputs()[1:]:
        rng = np.random.default_rng(len(column))
        X = np.c_[column, rng.permutation(len(column))].astype(np.float32)
        rows = np.flatnonzero(rng.random(len(column)) < 0.8)
        if len(rows) == 0:
            continue
        presorted = np.array([rows[np.argsort(x[rows], kind="stable")] for x in X.T])
        ranks = value_ranks(X, rows, presorted)
        for f in range(2):
            a, b = np.meshgrid(rows, rows)
            values, rank = X[:, f], ranks[f]
            np.testing.assert_array_equal(values[a] < values[b], rank[a] < rank[b])
            np.testing.assert_array_equal(values[a] == values[b], rank[a] == rank[b])


def test_reverse_sums_are_the_library_updates_past_the_middle():
    """One pass down from the node's end leaves at every position the left sum and weight
    that the library's update to it, restarted from the node's totals, computes."""
    from stragglers.methods._boosting_kernel import _reverse_sums

    rng = np.random.default_rng(11)
    for n, weighted in ((1, False), (2, True), (17, False), (330, True), (330, False)):
        targets = rng.lognormal(0, 3, n + 4) * rng.choice([-1, 1], n + 4)
        weights = rng.uniform(0.5, 2.0, n + 4) if weighted else np.ones(n + 4)
        rows = np.r_[[n + 3], rng.permutation(n + 3)[: n + 1]].astype(np.int64)
        start, end = 1, n + 1
        sum_total = weighted_node = 0.0
        for i in rows[start:end]:
            sum_total += weights[i] * targets[i]
            weighted_node += weights[i]
        for low in (start, (start + end) // 2):
            reverse = np.full((2, n + 2), np.nan)
            _reverse_sums(rows, targets, weights, low, end, sum_total, weighted_node, reverse)
            for position in range(low, end):
                sum_left, weighted_left = sum_total, weighted_node
                for q in range(end - 1, position - 1, -1):
                    sum_left -= weights[rows[q]] * targets[rows[q]]
                    weighted_left -= weights[rows[q]]
                assert reverse[0, position] == sum_left
                assert reverse[1, position] == weighted_left
            assert np.isnan(reverse[:, :low]).all() and np.isnan(reverse[:, end:]).all()
