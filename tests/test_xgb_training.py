"""The boosting loops of stragglers/methods/_xgb_training.py train XGBoost's own trees:
Grabit's saved model is the same bytes as `xgboost.train`'s with the same custom objective,
XGBOD's classifier the same bytes as `XGBClassifier.fit`'s, and so are their predictions."""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb

from stragglers.methods._censored import tobit_grad_hess
from stragglers.methods._xgb_training import (
    fit_classifier,
    train_builtin,
    train_with_objective,
)
from stragglers.methods.grabit import fit_boosted_tobit


def _problems(count: int, seed: int):
    """Training sets as Grabit fits them: censored targets, a constant column, ties, a single
    row, a single feature column of zeros (no varying feature)."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        n = int(rng.integers(1, 60)) if trial % 5 else 1 + trial % 3
        d = int(rng.integers(1, 4))
        Z = rng.normal(size=(n, d))
        shape = trial % 4
        if shape == 1:
            Z = np.round(Z)
        elif shape == 2:
            Z[:, 0] = 0.0
        elif shape == 3:
            Z = np.zeros((n, 1))
        y = np.abs(Z[:, 0] + rng.normal(size=n)) + 0.1
        censored = rng.random(n) < 0.4
        yield Z, y, censored, float(rng.uniform(0.05, 2.0)), int(rng.integers(2**31 - 1))


def _tobit_objective(y: np.ndarray, censored: np.ndarray, sigma: float):
    """Grabit's objective (fit_boosted_tobit's): Tobit gradients scaled by sigma^2."""
    s2 = sigma * sigma

    def objective(predt, data):
        grad, hess = tobit_grad_hess(predt, y, censored, sigma)
        return grad * s2, hess * s2

    return objective


def _params(seed: int, y: np.ndarray, depth: int) -> dict:
    return {
        "max_depth": depth,
        "eta": 0.1,
        "base_score": float(np.mean(y)),
        "min_child_weight": 1e-3,
        "tree_method": "exact",
        "nthread": 1,
        "seed": seed,
        "verbosity": 0,
    }


@pytest.mark.parametrize("depth", [1, 5])
def test_train_with_objective_equals_xgboost_train(depth):
    for Z, y, censored, sigma, seed in _problems(30, depth):
        objective = _tobit_objective(y, censored, sigma)
        params = _params(seed, y, depth)
        rounds = 1 + seed % 12
        expected = xgb.train(params, xgb.DMatrix(Z, label=y), num_boost_round=rounds, obj=objective)
        ours = train_with_objective(params, xgb.DMatrix(Z, label=y), rounds, objective)
        assert bytes(ours.save_raw()) == bytes(expected.save_raw())
        probe = xgb.DMatrix(np.vstack([Z, Z * 2.0 - 0.5]))
        for margin in (True, False):
            assert (
                ours.predict(probe, output_margin=margin).tobytes()
                == expected.predict(probe, output_margin=margin).tobytes()
            )


def test_fit_boosted_tobit_keeps_the_libraries_trees():
    for Z, y, censored, sigma, seed in _problems(8, 7):
        model = fit_boosted_tobit(Z, y, censored, sigma, 20, 0.1, 5, seed)
        expected = xgb.train(
            _params(seed, y, 5),
            xgb.DMatrix(Z, label=y),
            num_boost_round=20,
            obj=_tobit_objective(y, censored, sigma),
        )
        assert bytes(model.booster.save_raw()) == bytes(expected.save_raw())


def test_train_with_objective_rejects_misshapen_gradients():
    Z, y = np.arange(6.0).reshape(3, 2), np.arange(3.0)
    with pytest.raises(ValueError):
        train_with_objective(
            _params(0, y, 2), xgb.DMatrix(Z, label=y), 2, lambda p, d: (np.ones(4), np.ones(4))
        )


def _classification_problems(count: int, seed: int):
    """Rows and 0/1 labels as XGBOD's classifier gets them: two classes, a single class
    (the script's fits before a straggler finishes), one row, ties, a constant column,
    missing values."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        n = int(rng.integers(2, 80)) if trial % 6 else 1 + trial % 4
        d = int(rng.integers(1, 6))
        X = rng.normal(size=(n, d))
        shape = trial % 5
        if shape == 1:
            X = np.round(X)
        elif shape == 2:
            X[:, 0] = 2.0
        elif shape == 3 and n > 2:
            X[rng.random(X.shape) < 0.1] = np.nan
        y = (rng.random(n) < 0.3).astype(int)
        if trial % 7 == 0 or y.min() == 1:
            y[:] = 0  # labels 1 alone are no valid classes (see the test below)
        yield X, y, int(rng.integers(2**31 - 1))


def test_train_builtin_equals_xgboost_train():
    for X, y, seed in _classification_problems(20, 3):
        params = {"objective": "binary:logistic", "max_depth": 1 + seed % 4, "seed": seed}
        params |= {"nthread": 1, "verbosity": 0}
        rounds = seed % 15
        expected = xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=rounds)
        ours = train_builtin(params, xgb.DMatrix(X, label=y), rounds)
        assert bytes(ours.save_raw()) == bytes(expected.save_raw())
        probe = xgb.DMatrix(np.vstack([X, X * 2.0 - 0.5]))
        assert ours.predict(probe).tobytes() == expected.predict(probe).tobytes()


def _classifier(seed: int) -> xgb.XGBClassifier:
    """XGBClassifier as PyOD's XGBOD builds it (its defaults and its two legacy keywords)."""
    return xgb.XGBClassifier(
        max_depth=1 + seed % 5,
        learning_rate=(0.1, 0.3, 1.0)[seed % 3],
        n_estimators=1 + seed % 40,
        silent=True,
        objective="binary:logistic",
        booster="gbtree",
        n_jobs=1,
        nthread=None,
        gamma=0,
        min_child_weight=1,
        max_delta_step=0,
        subsample=1,
        colsample_bytree=1,
        colsample_bylevel=1,
        reg_alpha=0,
        reg_lambda=1,
        scale_pos_weight=1,
        base_score=(None, 0.5)[seed % 2],
        random_state=seed % 3,
    )


@pytest.mark.parametrize("reset", [True, False])
def test_fit_classifier_equals_xgbclassifier_fit(reset):
    """With or without XGBoost's final reset of the training caches (XGBOD's refits skip it):
    the same saved model, parameters and predictions."""
    for X, y, seed in _classification_problems(40, 5):
        expected = _classifier(seed).fit(X, y)
        ours = fit_classifier(_classifier(seed), X, y, reset=reset)
        assert bytes(ours.get_booster().save_raw()) == bytes(expected.get_booster().save_raw())
        assert ours.n_classes_ == expected.n_classes_ and ours.objective == expected.objective
        assert ours.get_params() == expected.get_params()
        probe = np.vstack([X, X * 2.0 - 0.5])
        assert ours.predict_proba(probe).tobytes() == expected.predict_proba(probe).tobytes()
        assert ours.predict(probe).tobytes() == expected.predict(probe).tobytes()


def test_fit_classifier_leaves_other_fits_to_xgboost():
    X = np.random.default_rng(2).normal(size=(12, 3))
    for y in (np.arange(12) % 3, np.ones(12, dtype=int), np.arange(12) % 2 + 1):
        try:
            expected = _classifier(4).fit(X, y)
        except ValueError as error:
            with pytest.raises(ValueError, match="Invalid classes"):
                fit_classifier(_classifier(4), X, y)
            assert "Invalid classes" in str(error)
            continue
        ours = fit_classifier(_classifier(4), X, y)
        assert bytes(ours.get_booster().save_raw()) == bytes(expected.get_booster().save_raw())
    y = np.arange(12) % 2
    ours = fit_classifier(_classifier(4), X.tolist(), y)  # not an array: XGBClassifier.fit
    assert bytes(ours.get_booster().save_raw()) == bytes(
        _classifier(4).fit(X, y).get_booster().save_raw()
    )
