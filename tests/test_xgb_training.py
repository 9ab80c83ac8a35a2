"""Grabit's boosting loop (stragglers/methods/_xgb_training.py) trains XGBoost's own trees:
the saved model is the same bytes as `xgboost.train`'s with the same custom objective, and
so are its predictions."""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb

from stragglers.methods._censored import tobit_grad_hess
from stragglers.methods._xgb_training import train_with_objective
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
