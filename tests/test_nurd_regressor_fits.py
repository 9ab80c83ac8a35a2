"""NURD's latency regressors fitted with less Python around them, against the library calls
they replace, model for model: BoostedLatencyModel's rounds against `xgboost.train` (the
saved model's bytes and the predictions), `fit_gradient_boosting` against
`GradientBoostingRegressor.fit` (every tree's nodes and the predictions).
"""

from __future__ import annotations

import numpy as np
import pytest

from stragglers.methods.nurd import BoostedLatencyModel, fit_gradient_boosting


def regression_inputs():
    """(features, latency) pairs: random, tied and constant columns, duplicated rows, one and
    two rows, NaN features (both libraries take them as missing), latencies all equal."""
    rng = np.random.default_rng(7)
    cases = []
    for n, d in ((1, 3), (2, 1), (3, 4), (17, 5), (60, 12), (250, 8)):
        cases.append((rng.random((n, d)), rng.lognormal(7, 1, n)))
    tied = np.round(rng.random((80, 6)) * 3) / 3
    tied[:, 2] = 1.0  # a constant column
    cases.append((tied, np.round(rng.random(80) * 4)))
    duplicated = np.repeat(rng.random((10, 4)), 5, axis=0)
    cases.append((duplicated, np.repeat(rng.random(10), 5)))
    cases.append((rng.random((40, 3)), np.full(40, 5.0)))
    missing = rng.random((70, 5))
    missing[rng.random(missing.shape) < 0.2] = np.nan
    cases.append((missing, rng.random(70)))
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
        arrays += [t.feature, t.threshold, t.value, t.children_left, t.n_node_samples]
        arrays += [t.impurity, t.missing_go_to_left]
    return arrays


@pytest.mark.parametrize("case", range(len(regression_inputs())))
@pytest.mark.parametrize(
    "params",
    [
        {"random_state": 42},
        {"n_estimators": 13, "max_depth": 5, "learning_rate": 0.3, "random_state": 3},
    ],
)
def test_fit_gradient_boosting_equals_fit(case, params):
    from sklearn.ensemble import GradientBoostingRegressor

    features, latency = regression_inputs()[case]
    if np.isnan(features).any():  # refused alike (the replay fills NaN before)
        with pytest.raises(ValueError, match="NaN"):
            GradientBoostingRegressor(**params).fit(features, latency)
        with pytest.raises(ValueError, match="NaN"):
            fit_gradient_boosting(GradientBoostingRegressor(**params), features, latency)
        return
    ours = fit_gradient_boosting(GradientBoostingRegressor(**params), features, latency)
    theirs = GradientBoostingRegressor(**params).fit(features, latency)
    for a, b in zip(tree_arrays(ours), tree_arrays(theirs), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ours.train_score_, theirs.train_score_)
    rng = np.random.default_rng(case)
    for block in (features, rng.random((9, features.shape[1]))):
        np.testing.assert_array_equal(ours.predict(block), theirs.predict(block))


def test_fit_gradient_boosting_still_checks_parameters():
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.utils._param_validation import InvalidParameterError

    features, latency = regression_inputs()[4]
    for bad in ({"n_estimators": 0}, {"learning_rate": -1.0}, {"max_depth": "3"}):
        with pytest.raises(InvalidParameterError):
            GradientBoostingRegressor(**bad).fit(features, latency)
        with pytest.raises(InvalidParameterError):
            fit_gradient_boosting(GradientBoostingRegressor(**bad), features, latency)
    import sklearn

    assert sklearn.get_config()["skip_parameter_validation"] is False  # restored
